import Foundation

/// Text as a terminal shows it: control characters made visible (a value
/// read from a database must not move the cursor or change colours), the
/// width in columns (wide East Asian characters and emoji take two), and
/// truncation with `…`.
///
/// ```swift
/// CellText.sanitized("a\nb\u{1B}[2J")        // "a\\nb\\x1b[2J"
/// CellText.escapingInvalidUTF8(Data([0x61, 0xfe]))   // "a\\xfe"
/// CellText.width(of: "日本")                  // 4
/// CellText.truncated("Barbara", toWidth: 4)  // "Bar…"
/// ```
enum CellText {
    /// `text` with line breaks, tabs and other control characters replaced
    /// by visible escapes: `\n`, `\r`, `\t`, `\x1b`.
    static func sanitized(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var result = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where isControl(scalar):
                let hex = String(scalar.value, radix: 16)
                result += scalar.value < 0x100 ? "\\x" + (hex.count < 2 ? "0" + hex : hex) : "\\u{\(hex)}"
            default:
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// Text from bytes that are not all valid UTF-8: the valid characters as
    /// they are, each byte of an invalid sequence as `\xfe` (lowercase
    /// hexadecimal, as control characters are shown).
    static func escapingInvalidUTF8(_ bytes: Data) -> String {
        var result = ""
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = bytes.makeIterator()
        var offset = bytes.startIndex
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let encoded):
                result.unicodeScalars.append(Unicode.UTF8.decode(encoded))
                offset += encoded.count
            case .error(let length):
                for byte in bytes[offset..<offset + length] {
                    let hex = String(byte, radix: 16)
                    result += "\\x" + (hex.count < 2 ? "0" + hex : hex)
                }
                offset += length
            case .emptyInput:
                return result
            }
        }
    }

    /// Whether `scalar` is a C0 or C1 control character, DEL, or a
    /// bidirectional override that could reorder what the terminal shows.
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        return value < 0x20 || (0x7F...0x9F).contains(value) || (0x202A...0x202E).contains(value)
            || (0x2066...0x2069).contains(value)
    }

    /// The number of terminal columns `text` takes (after sanitizing).
    static func width(of text: String) -> Int {
        text.reduce(0) { $0 + width(of: $1) }
    }

    /// The columns one character takes: 0, 1 or 2.
    static func width(of character: Character) -> Int {
        guard let first = character.unicodeScalars.first else { return 0 }
        let value = first.value
        if character.unicodeScalars.count == 1 && first.properties.generalCategory == .nonspacingMark { return 0 }
        if first.properties.isEmojiPresentation { return 2 }
        switch value {
        case 0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF,
            0xA000...0xA4CF, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60,
            0xFFE0...0xFFE6, 0x20000...0x3FFFD:
            return 2
        default:
            return 1
        }
    }

    /// `text` cut to at most `width` columns, ending with `…` when cut.
    static func truncated(_ text: String, toWidth width: Int) -> String {
        guard width > 0 else { return "" }
        guard self.width(of: text) > width else { return text }
        var result = ""
        var used = 0
        for character in text {
            let characterWidth = self.width(of: character)
            if used + characterWidth > width - 1 { break }
            result.append(character)
            used += characterWidth
        }
        return result + "…"
    }

    /// `text` padded with spaces to `width` columns, on the right (`left`
    /// alignment) or on the left.
    static func padded(_ text: String, toWidth width: Int, alignRight: Bool = false) -> String {
        let padding = String(repeating: " ", count: max(0, width - self.width(of: text)))
        return alignRight ? padding + text : text + padding
    }
}

extension CellText {
    /// The columns `text` takes on screen, not counting ANSI escape sequences.
    static func visibleWidth(of text: String) -> Int {
        width(of: withoutEscapes(text))
    }

    /// `text` without its ANSI escape sequences (`ESC [ … letter`).
    static func withoutEscapes(_ text: String) -> String {
        guard text.contains("\u{1B}") else { return text }
        var result = ""
        var inEscape = false
        for scalar in text.unicodeScalars {
            if inEscape {
                if (0x40...0x7E).contains(scalar.value) && scalar != "[" { inEscape = false }
            } else if scalar == "\u{1B}" {
                inEscape = true
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// `text`, which may hold ANSI escapes, padded with spaces to `width`
    /// visible columns.
    static func paddedVisible(_ text: String, toWidth width: Int) -> String {
        text + String(repeating: " ", count: max(0, width - visibleWidth(of: text)))
    }
}
