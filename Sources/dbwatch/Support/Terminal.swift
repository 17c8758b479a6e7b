import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// What `dbwatch` knows about where its standard output goes: a terminal or
/// not, its width and height, and whether colour is wanted.
///
/// ```swift
/// let terminal = Terminal.standardOutput(color: .auto)
/// if terminal.isTerminal { Output.standardOutput(ANSI.clearScreen) }
/// ```
struct Terminal: Sendable {
    /// Whether standard output is a terminal.
    var isTerminal: Bool
    /// Whether to use ANSI colours and reverse video.
    var usesColor: Bool
    /// The width in columns to fit: the terminal's, or `COLUMNS`; `nil` when
    /// output is not a terminal and `COLUMNS` is not set (no limit).
    var width: Int?
    /// The height in lines: the terminal's, or `LINES`; `nil` when unknown.
    var height: Int?

    /// The terminal of standard output, right now (it may be resized).
    ///
    /// - Parameter color: `--color`; `auto` means colour on a terminal unless
    ///   `NO_COLOR` is set to a non-empty value.
    static func standardOutput(color: ColorMode = .auto) -> Terminal {
        let environment = ProcessInfo.processInfo.environment
        let isTerminal = isatty(STDOUT_FILENO) != 0
        let size = isTerminal ? windowSize(of: STDOUT_FILENO) : nil
        let width = size?.columns ?? environment["COLUMNS"].flatMap { Int($0) }.flatMap { $0 > 0 ? $0 : nil }
        let height = size?.rows ?? environment["LINES"].flatMap { Int($0) }.flatMap { $0 > 0 ? $0 : nil }
        let noColor = !(environment["NO_COLOR"] ?? "").isEmpty
        let usesColor: Bool
        switch color {
        case .always: usesColor = true
        case .never: usesColor = false
        case .auto: usesColor = isTerminal && !noColor
        }
        return Terminal(
            isTerminal: isTerminal, usesColor: usesColor, width: width ?? (isTerminal ? 80 : nil),
            height: height ?? (isTerminal ? 24 : nil))
    }

    /// The size of the terminal on `descriptor` (`TIOCGWINSZ`), or `nil`.
    static func windowSize(of descriptor: Int32) -> (columns: Int, rows: Int)? {
        var size = winsize()
        guard ioctl(descriptor, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return nil }
        return (Int(size.ws_col), Int(size.ws_row))
    }
}
