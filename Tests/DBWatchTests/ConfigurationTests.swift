import DBWatch
import Testing

/// The defaults of `Configuration`, `ExternalChangeDetection` and
/// `UntrustedSQLPolicy`, as documented.
@Suite("Configuration defaults")
struct ConfigurationTests {
    /// `busyTimeout` 5 s, `foreignKeysEnabled` on, `maximumReaderCount` 4,
    /// `allowsURIFilenames` off, `writesOnCallerThread` on, external change
    /// detection off and, when on, polling every second; untrusted SQL
    /// limited to 5 s, values of 1 MB, results of 100 MB and temporary
    /// storage of 256 MB.
    @Test func documentedDefaults() {
        let configuration = Configuration()
        #expect(configuration.readOnly == false)
        #expect(configuration.busyTimeout == .seconds(5))
        #expect(configuration.foreignKeysEnabled)
        #expect(configuration.maximumReaderCount == 4)
        #expect(configuration.allowsURIFilenames == false)
        #expect(configuration.writesOnCallerThread)
        #expect(configuration.externalChangeDetection == nil)
        let detection = ExternalChangeDetection()
        #expect(detection.pollInterval == .seconds(1))
        #expect(detection.usesFileNotifications)
        #expect(ExternalChangeDetection.minimumPollInterval == .milliseconds(10))
        #expect(UntrustedSQLPolicy().timeLimit == .seconds(5))
        #expect(UntrustedSQLPolicy().maximumValueLength == 1_000_000)
        #expect(UntrustedSQLPolicy().maximumResultSize == 100_000_000)
        #expect(UntrustedSQLPolicy().maximumTemporaryStorage == 256_000_000)
    }
}
