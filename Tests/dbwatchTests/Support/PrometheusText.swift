/// Values of a Prometheus text exposition, for the metrics tests.
///
/// ```swift
/// PrometheusText.value(of: "dbwatch_clients_connected", in: body)   // 3.0
/// ```
enum PrometheusText {
    /// The value of the sample named `name` without labels, or `nil`.
    static func value(of name: String, in text: String) -> Double? {
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: " ")
            if parts.count >= 2, parts[0] == name { return Double(parts[1]) }
        }
        return nil
    }

    /// Whether `name` is declared with `# TYPE name kind`.
    static func declares(_ name: String, as kind: String, in text: String) -> Bool {
        text.split(separator: "\n").contains { $0 == "# TYPE \(name) \(kind)" }
    }
}
