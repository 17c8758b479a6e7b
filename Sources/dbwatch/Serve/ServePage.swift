/// The page of `serve` at `/`: filled in later.
enum ServePage {
    /// The whole page, with `title` (escaped) as its title.
    static func html(title: String) -> String {
        "<!doctype html><title>dbwatch</title>"
    }
}
