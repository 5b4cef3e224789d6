#!/usr/bin/env python3
"""Rewrites docs/conformance.md from the reports `ctest -R onnx-` leaves.

usage: write_conformance_doc.py BUILD_DIR [DOC]
Reads BUILD_DIR/test/conformance{,-pytorch-converted,-pytorch-operator,
-simple}/report.md and replaces DOC's table and per-suite sections (DOC
defaults to docs/conformance.md beside this script's repository). The prose
before the table and between the table and the first section is kept.
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SUITES = [("node", "conformance"),
          ("pytorch-converted", "conformance-pytorch-converted"),
          ("pytorch-operator", "conformance-pytorch-operator"),
          ("simple", "conformance-simple")]
COUNTS = re.compile(r"(\d+) passed, (\d+) failed, (\d+) unsupported, "
                    r"(\d+) with defective test data, of (\d+)")


def main(build, doc):
    text = open(doc).read()
    head, rest = text.split("| suite |", 1)
    prose = rest.split("\n\n", 1)[1].split("\n## ", 1)[0]
    rows, sections = [], []
    for name, folder in SUITES:
        report = open(os.path.join(build, "test", folder, "report.md")).read()
        counts = COUNTS.search(report)
        if not counts:
            raise SystemExit(f"error: no counts in {folder}/report.md")
        test = "node" if name == "node" else name
        rows.append(f"| {name} (`ctest -R onnx-{test}-tests`) | "
                    + " | ".join(counts.groups()) + " |")
        body = report.split("\n", 1)[1].replace("\n## ", "\n### ")
        sections.append(f"## {name}\n{body.rstrip()}\n")
    table = ("| suite | passed | failed | unsupported | defective data | "
             "total |\n| --- | --- | --- | --- | --- | --- |\n"
             + "\n".join(rows))
    with open(doc, "w") as f:
        f.write(head + table + "\n\n" + prose.rstrip() + "\n\n"
                + "\n".join(sections))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else
         os.path.join(HERE, "..", "..", "docs", "conformance.md"))
