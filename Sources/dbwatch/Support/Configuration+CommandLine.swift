import DBWatch
import Logging

extension Configuration {
    /// The configuration every command starts from: the library's log
    /// (an observation's failing fetch is a warning) is silenced, since the
    /// command reports errors itself, on its own output and exit status.
    static func commandLine() -> Configuration {
        var configuration = Configuration()
        configuration.logger = Logger(label: "dbwatch", factory: { _ in SwiftLogNoOpLogHandler() })
        return configuration
    }
}
