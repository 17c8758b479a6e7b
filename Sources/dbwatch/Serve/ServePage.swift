/// The page of `serve` at `/`: each query as a live table, every query a
/// subscription of one connection of the sync protocol (`/dbwatch.js`:
/// keyed changes, one batch per commit), the cells that changed since the
/// previous value highlighted (rows matched by the query's key columns, as
/// `watch` does).
/// One document, HTML, CSS and JavaScript in `Page/index.html`, and the
/// client module it imports (no framework, no CDN: it works offline),
/// readable on a phone.
///
/// Parameters come from the page's own query string (`/?n=10` fills `:n` of
/// every query that has it) and from a field per parameter.
enum ServePage {
    /// The whole page, with `title` (escaped) as its title.
    static func html(title: String) -> String {
        template.replacingOccurrences(of: "{{TITLE}}", with: escaped(title))
    }

    /// `text` safe inside HTML text and attribute values.
    static func escaped(_ text: String) -> String {
        var result = ""
        for character in text {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&#39;"
            default: result.append(character)
            }
        }
        return result
    }

    /// `Page/index.html`, whose bytes SwiftPM embeds in the binary
    /// (`.embedInCode` in Package.swift): `{{TITLE}}` marks the title's
    /// places.
    private static let template = String(decoding: PackageResources.index_html, as: UTF8.self)
}
