import ArgumentParser
import Foundation
import SignCoreVectors

struct Vectors: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Check SignCore against the known-answer vectors.")

    @Flag(help: "Run every case of every vector file (the only mode).")
    var check = false

    @Option(help: "Folder of the vector files; default: ./Vectors, else the source tree's.")
    var dir: String?

    func run() async {
        guard check else { fail("nothing to do: pass --check") }
        let local = URL(fileURLWithPath: "Vectors")
        let directory = dir.map { URL(fileURLWithPath: $0) }
            ?? (FileManager.default.fileExists(atPath: local.appendingPathComponent("wtoken.json").path) ? local : VectorFile.sourceDirectory)
        let report: VectorCheck.Report
        do { report = try await VectorCheck.all(in: directory) } catch { fail("cannot read the vectors in \(directory.path): \(error)") }
        for (file, count) in report.cases.sorted(by: { $0.key < $1.key }) {
            let failed = report.problems.filter { $0.hasPrefix(file + " ") }.count
            print("\(file.padding(toLength: 20, withPad: " ", startingAt: 0)) \(count) cases, \(failed) failed")
        }
        for problem in report.problems { print("FAIL \(printable(problem))") }
        if !report.problems.isEmpty { fail("\(report.problems.count) of \(report.total) vector cases failed") }
        print("all \(report.total) vector cases passed")
    }
}
