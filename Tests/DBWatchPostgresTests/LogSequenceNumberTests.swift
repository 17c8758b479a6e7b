import Testing

@testable import DBWatchPostgres

@Suite("Log positions")
struct LogSequenceNumberTests {
    @Test("PostgreSQL's X/Y text reads and writes back")
    func textRoundTrips() {
        let position = LogSequenceNumber("16/B374D848")
        #expect(position?.rawValue == 0x16_B374_D848)
        #expect(position?.description == "16/B374D848")
        #expect(LogSequenceNumber("0/0") == .zero)
    }

    @Test("Text that is no position gives nil", arguments: ["", "16", "16/", "/1", "x/1", "123456789/0", "1/2/3"])
    func badTextIsRejected(text: String) {
        #expect(LogSequenceNumber(text) == nil)
    }

    @Test("Positions order as the log does")
    func positionsOrder() throws {
        let early = try #require(LogSequenceNumber("0/FFFFFFFF"))
        let late = try #require(LogSequenceNumber("1/0"))
        #expect(early < late)
    }
}
