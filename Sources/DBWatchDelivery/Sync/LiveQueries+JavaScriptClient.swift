extension LiveQueries {
    /// The JavaScript client of the sync protocol, `dbwatch.js`: one ES
    /// module without dependencies, to serve at `/dbwatch.js` (the
    /// adapters add the route in one line) and import from a page.
    ///
    /// ```js
    /// import { connect } from "/dbwatch.js";
    /// ```
    public static var javaScriptClient: [UInt8] { PackageResources.dbwatch_js }

    /// The answer that serves ``javaScriptClient``.
    package static var javaScriptClientAnswer: HTTPAnswer {
        HTTPAnswer(
            status: 200,
            headers: [("Content-Type", "text/javascript; charset=utf-8"), ("Cache-Control", "no-cache")],
            body: javaScriptClient)
    }
}
