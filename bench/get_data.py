"""Download the public OpenAPI pairs `bench/diff_bench.py` measures, and check their digests.

Usage: python bench/get_data.py DIR [--smoke]

Each file is a byte-for-byte copy of a public blob at a fixed commit (GitHub's REST API
description as republished by octokit/openapi, and Stripe's stripe/openapi; both MIT). The
script fetches what DIR does not hold yet from raw.githubusercontent.com, refuses a file
whose SHA-256 differs from the one below, and prints the `diff_bench.py` command to run.
It needs the internet; the test suite runs only `--smoke`, which never downloads: it checks
the digests of the files DIR holds (default `../shared/bench/openapi`, where diff_bench.py reads
them) and is skipped when DIR holds none.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import smoke  # noqa: E402

RAW = "https://raw.githubusercontent.com"
FILES = {
    "github-2021-09-27.json": (
        "octokit/openapi/420a694bb8056abbc09ee8fcdc3a5abb49797a6f/generated/api.github.com.json",
        "7f658b226f06f39476dc7da44e441d9010648327c80e48eecd15435d0a7391c5",
    ),
    "github-2022-07-18.json": (
        "octokit/openapi/58592853068e7e3d7fa50cb61687c41f6a9a11f0/generated/api.github.com.json",
        "20655676515038dcc6b2f19dd96a53ec2cfc5ed406baea1a5e2e96210f7f8648",
    ),
    "stripe-2021-10-19.json": (
        "stripe/openapi/bf2fb3cb05af6db301358182a5b6532c782e88f7/openapi/spec3.json",
        "1f8db3e9657ebd9578ce0e379eaf63d7fa570dc90302aa90cb42e7ecfb5bda7a",
    ),
    "stripe-2022-04-12.json": (
        "stripe/openapi/e0123a38b40c8d840b4c0469ac0ee1650b6bfea3/openapi/spec3.json",
        "0623034db1e5a471369edf211838df328296018cc96dcb4bab0d5c28ab1efc9e",
    ),
    "stripe-2023-03-11.yaml": (
        "stripe/openapi/07494a514811def5502133315e937adc3d5387dc/openapi/spec3.yaml",
        "e073a3627104729cd50aef109987037da46d8424f39c5ce42ea6dc40311a8603",
    ),
    "stripe-2023-09-12.yaml": (
        "stripe/openapi/63a674638635c68de26b9f3add13e58198f4df44/openapi/spec3.yaml",
        "eed9ac08a03a5374caa994362bfa080ae87ee75f0a3dc76f9d48b19c705b50bb",
    ),
}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("dir", nargs="?", type=Path, help="where the files go")
    args = smoke.parse(parser, {"dir": ROOT.parent / "shared" / "bench" / "openapi"})
    if args.dir is None:
        parser.error("DIR is required")
    target: Path = args.dir
    if args.smoke:
        missing = [name for name in FILES if not (target / name).exists()]
        if len(missing) == len(FILES):
            smoke.skip(f"no benchmark data in {target} (smoke size never downloads)")
        for name in missing:
            print(f"{name}: not in {target}, not fetched (smoke size)")
    target.mkdir(parents=True, exist_ok=True)
    for name, (path, digest) in FILES.items():
        file = target / name
        if args.smoke and not file.exists():
            continue
        if not file.exists():
            print(f"fetching {name} ...", flush=True)
            with urllib.request.urlopen(f"{RAW}/{path}", timeout=60) as response:  # noqa: S310
                file.write_bytes(response.read())
        actual = hashlib.sha256(file.read_bytes()).hexdigest()
        if actual != digest:
            print(f"{file}: SHA-256 {actual}, expected {digest}", file=sys.stderr)
            return 1
        print(f"{name}: ok")
    print(f"now: python bench/diff_bench.py --dir {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
