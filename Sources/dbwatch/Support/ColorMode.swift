import ArgumentParser

/// `--color`: when to use ANSI colours and reverse video.
enum ColorMode: String, CaseIterable, ExpressibleByArgument, Sendable {
    /// On a terminal, unless `NO_COLOR` is set.
    case auto
    /// Always, even into a pipe.
    case always
    /// Never.
    case never
}
