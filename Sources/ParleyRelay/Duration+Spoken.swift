extension Duration {
    /// Seconds as a message names them: "10 s", "2.5 s", "0.3 s" (to a tenth).
    var spokenSeconds: String {
        let (seconds, attoseconds) = components
        let tenths = seconds * 10 + (attoseconds + 50_000_000_000_000_000) / 100_000_000_000_000_000
        return tenths % 10 == 0 ? "\(tenths / 10) s" : "\(tenths / 10).\(tenths % 10) s"
    }
}
