/// The ANSI escape sequences `dbwatch` uses, and helpers that apply them
/// only when colour is on.
///
/// ```swift
/// ANSI.style("changed", .reverse, enabled: terminal.usesColor)
/// ```
enum ANSI {
    /// Moves the cursor to the top-left corner.
    static let home = "\u{1B}[H"
    /// Clears the whole screen.
    static let clearScreen = "\u{1B}[2J"
    /// Clears from the cursor to the end of the line.
    static let clearLine = "\u{1B}[K"
    /// Clears from the cursor to the end of the screen.
    static let clearBelow = "\u{1B}[J"
    /// Switches to the alternate screen (what full-screen programs draw on).
    static let alternateScreen = "\u{1B}[?1049h"
    /// Back to the normal screen, as it was before.
    static let normalScreen = "\u{1B}[?1049l"
    /// Hides the cursor.
    static let hideCursor = "\u{1B}[?25l"
    /// Shows the cursor.
    static let showCursor = "\u{1B}[?25h"
    /// Resets every attribute.
    static let reset = "\u{1B}[0m"

    /// A text attribute or colour: its "on" parameter and its "off" parameter.
    enum Style: Sendable {
        case bold, dim, reverse, underline
        case red, green, yellow, blue, magenta, cyan, gray

        var on: String {
            switch self {
            case .bold: return "1"
            case .dim: return "2"
            case .underline: return "4"
            case .reverse: return "7"
            case .red: return "31"
            case .green: return "32"
            case .yellow: return "33"
            case .blue: return "34"
            case .magenta: return "35"
            case .cyan: return "36"
            case .gray: return "90"
            }
        }

        var off: String {
            switch self {
            case .bold, .dim: return "22"
            case .underline: return "24"
            case .reverse: return "27"
            default: return "39"
            }
        }
    }

    /// `text` with `styles` applied, or `text` unchanged when `enabled` is false.
    static func style(_ text: String, _ styles: Style..., enabled: Bool) -> String {
        style(text, styles, enabled: enabled)
    }

    /// `text` with `styles` applied, or `text` unchanged when `enabled` is false.
    static func style(_ text: String, _ styles: [Style], enabled: Bool) -> String {
        guard enabled, !styles.isEmpty, !text.isEmpty else { return text }
        let on = styles.map(\.on).joined(separator: ";")
        let off = styles.map(\.off).joined(separator: ";")
        return "\u{1B}[\(on)m\(text)\u{1B}[\(off)m"
    }
}
