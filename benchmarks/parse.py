"""Parse benchmark: our streaming reader against a bare lxml ``iterparse`` loop, in one run.

Generates Resource Lists of 50,000 and 1,000,000 entries (loc, lastmod, hash, length and type on
every entry) under ``benchmarks/.data/``, then times each parser in a fresh subprocess (so that
each one's peak RSS is its own) and prints the time ratio and the peak RSS of both.

Bars (DESIGN.md): ratio <= 2.0 at 50,000 entries; our peak RSS under 100 MB at 1,000,000.

Run: ``make bench`` or ``uv run python benchmarks/parse.py [--rounds N]``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

DATA = Path(__file__).parent / ".data"
SITEMAP = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
RS = "{http://www.openarchives.org/rs/terms/}"
SIZES = (50_000, 1_000_000)
RATIO_BAR = 2.0
RSS_BAR_MB = 100.0


def generate(count: int) -> Path:
    """Write a Resource List of ``count`` entries (once; reused by later runs)."""
    path = DATA / f"resourcelist-{count}.xml"
    if path.exists():
        return path
    DATA.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    with partial.open("w", encoding="utf-8") as out:
        out.write(
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"\n'
            '        xmlns:rs="http://www.openarchives.org/rs/terms/">\n'
            '  <rs:ln rel="up" href="http://example.com/dataset1/capabilitylist.xml"/>\n'
            '  <rs:md capability="resourcelist" at="2013-01-03T09:00:00Z"/>\n')
        for start in range(0, count, 10_000):
            out.write("".join(
                f"  <url>\n    <loc>http://example.com/dataset1/res/{i:08d}.html</loc>\n"
                f"    <lastmod>2013-01-02T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:"
                f"{i % 60:02d}Z</lastmod>\n"
                f'    <rs:md hash="md5:{i:032x}" length="{1000 + i % 90_000}" '
                f'type="text/html"/>\n  </url>\n'
                for i in range(start, min(count, start + 10_000))))
        out.write("</urlset>\n")
    partial.rename(path)
    return path


def parse_ours(path: Path) -> int:
    """Our reader, every entry converted into model objects."""
    from airflow_provider_resourcesync.protocol.reader import DocumentReader

    count = 0
    with DocumentReader(path) as reader:
        for _entry in reader:
            count += 1
    return count


def parse_bare(path: Path) -> int:
    """The floor: iterparse, read each entry's raw values, free the tree as it goes."""
    from lxml import etree

    count = 0
    loc_tag, lastmod_tag, md_tag = SITEMAP + "loc", SITEMAP + "lastmod", RS + "md"
    for _, element in etree.iterparse(str(path), events=("end",), tag=SITEMAP + "url"):
        values = (element.findtext(loc_tag), element.findtext(lastmod_tag),
                  dict(element.find(md_tag).attrib))
        count += values is not None
        element.clear()
        while element.getprevious() is not None:
            del element.getparent()[0]
    return count


def measure(parser: str, path: Path) -> dict[str, float]:
    """Run one parser in a fresh interpreter; its seconds and peak RSS in MB."""
    output = subprocess.run(
        [sys.executable, __file__, "--child", parser, str(path)],
        check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(output)


def child(parser: str, path: Path) -> None:
    function = {"ours": parse_ours, "bare": parse_bare}[parser]
    started = time.perf_counter()
    count = function(path)
    seconds = time.perf_counter() - started
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "peak_mb": peak_mb, "entries": count}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="runs of each parser (best kept)")
    parser.add_argument("--child", nargs=2, metavar=("PARSER", "FILE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], Path(args.child[1]))
        return 0
    ok = True
    for size in SIZES:
        path = generate(size)
        best: dict[str, dict[str, float]] = {}
        for _ in range(args.rounds if size == SIZES[0] else 1):
            for name in ("bare", "ours"):  # alternate, so drift hits both alike
                result = measure(name, path)
                assert result["entries"] == size, result
                if name not in best or result["seconds"] < best[name]["seconds"]:
                    best[name] = result
        ratio = best["ours"]["seconds"] / best["bare"]["seconds"]
        print(f"{size:>9,} entries ({path.stat().st_size / 1e6:.0f} MB): "
              f"ours {best['ours']['seconds']:.2f} s, peak RSS {best['ours']['peak_mb']:.0f} MB"
              f" | bare iterparse {best['bare']['seconds']:.2f} s, "
              f"peak RSS {best['bare']['peak_mb']:.0f} MB | time ratio {ratio:.2f}")
        if size == SIZES[0] and ratio > RATIO_BAR:
            print(f"  FAIL: ratio {ratio:.2f} > {RATIO_BAR}")
            ok = False
        if size == SIZES[-1] and best["ours"]["peak_mb"] >= RSS_BAR_MB:
            print(f"  FAIL: peak RSS {best['ours']['peak_mb']:.0f} MB >= {RSS_BAR_MB:.0f} MB")
            ok = False
    print("bars met" if ok else "bars NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
