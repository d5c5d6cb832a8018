"""The default embedder (MiniLM on onnxruntime) against MiniLM on sentence-transformers/torch:
quality (cosine between the two vectors of each sentence) and cost (import, load, per
sentence, per batch of 32, resident memory). Each backend runs in a fresh process.

    .venv/bin/python scripts/measure_embedder.py [--data ../shared/data/hotpotqa_dev412.jsonl]
        [-n 500] [--threads 1]

Sentences: the first n distinct context sentences of the HotpotQA file. torch needs the
sentence-transformers extra (scripts/setup local,sentence-transformers).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def sentences(data: Path, n: int) -> list[str]:
    seen: dict[str, None] = {}
    with data.open(encoding="utf-8") as fh:
        for line in fh:
            for paragraph in json.loads(line)["context"]["sentences"]:
                for s in paragraph:
                    if s.strip():
                        seen.setdefault(s.strip(), None)
                if len(seen) >= n:
                    return list(seen)[:n]
    return list(seen)


def rss_mib() -> float:
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def run_backend(backend: str, texts: list[str], threads: int, out: Path) -> dict[str, float]:
    """In this (fresh) process: import, load, embed one at a time and in batches."""
    sys.path.insert(0, str(ROOT))
    t0 = time.perf_counter()
    if backend == "onnx":
        import onnxruntime  # noqa: F401
        import tokenizers  # noqa: F401

        from cranimem_mcp.backends.embeddings import OnnxEmbedder

        imported = time.perf_counter()
        embedder = OnnxEmbedder(threads)
        embedder.load()
    else:
        import sentence_transformers  # noqa: F401

        from cranimem_mcp.backends.embeddings import SentenceTransformerEmbedder

        imported = time.perf_counter()
        embedder = SentenceTransformerEmbedder("all-MiniLM-L6-v2", threads)
        embedder._load()
    loaded = time.perf_counter()
    embedder.embed_sync(["warm up"])
    single_ms, singles = [], []
    for text in texts:
        t = time.perf_counter()
        singles.append(embedder.embed_sync([text])[0])
        single_ms.append((time.perf_counter() - t) * 1000)
    batch_ms, batched = [], []
    for start in range(0, len(texts), 32):
        t = time.perf_counter()
        batched.append(embedder.embed_sync(texts[start : start + 32]))
        batch_ms.append((time.perf_counter() - t) * 1000)
    single, batch = np.stack(singles), np.concatenate(batched)
    np.save(out, single)
    return {
        "import_s": imported - t0,
        "load_s": loaded - imported,
        "single_ms_p50": statistics.median(single_ms),
        "batch32_ms_p50": statistics.median(batch_ms),
        "rss_mib": rss_mib(),
        "batch_vs_single_max_abs": float(np.abs(batch - single).max()),
        "batch_vs_single_min_cos": float((batch * single).sum(axis=1).min()),
        "norm_max_dev": float(np.abs(np.linalg.norm(single, axis=1) - 1).max()),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    default_data = ROOT.parent / "shared/data/hotpotqa_dev412.jsonl"
    parser.add_argument("--data", type=Path, default=default_data)
    parser.add_argument("-n", type=int, default=500)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--backend", choices=["onnx", "torch"], help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    texts = sentences(args.data, args.n)
    if args.backend:  # the child process
        print(json.dumps(run_backend(args.backend, texts, args.threads, args.out)))
        return
    results, vectors = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for backend in ("onnx", "torch"):
            out = Path(tmp) / f"{backend}.npy"
            child = subprocess.run(
                [sys.executable, __file__, "--backend", backend, "--out", str(out),
                 "--data", str(args.data), "-n", str(args.n), "--threads", str(args.threads)],
                check=True, capture_output=True, text=True,
            )  # fmt: skip
            results[backend] = json.loads(child.stdout.strip().splitlines()[-1])
            vectors[backend] = np.load(out)
    cos = (vectors["onnx"] * vectors["torch"]).sum(axis=1)
    lengths = [len(t) for t in texts]
    print(f"{len(texts)} HotpotQA sentences ({min(lengths)}-{max(lengths)} chars, "
          f"median {statistics.median(lengths):.0f}), {args.threads} thread(s)")  # fmt: skip
    print("| | onnx (int8) | torch |\n|---|---:|---:|")
    for key in results["onnx"]:
        print(f"| {key} | {results['onnx'][key]:.4g} | {results['torch'][key]:.4g} |")
    p1, p5 = np.percentile(cos, 1), np.percentile(cos, 5)
    print(f"cosine(onnx, torch) per sentence: min {cos.min():.4f}, p1 {p1:.4f}, p5 {p5:.4f}, "
          f"median {np.median(cos):.4f}, mean {cos.mean():.4f}")  # fmt: skip
    # Do the two rank neighbours the same way? Top-5 neighbours of each sentence among all.
    agree = []
    for i in range(len(texts)):
        a = np.argsort(-(vectors["onnx"] @ vectors["onnx"][i]))[1:6]
        b = np.argsort(-(vectors["torch"] @ vectors["torch"][i]))[1:6]
        agree.append(len(set(a) & set(b)) / 5)
    print(f"top-5 neighbour overlap (onnx vs torch space): mean {np.mean(agree):.3f}")


if __name__ == "__main__":
    main()
