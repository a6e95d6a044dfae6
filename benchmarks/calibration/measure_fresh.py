"""One configuration of measure_loops.py at one sequence length in a fresh process, as a user
launches a job: does the out-of-memory boundary belong to the step, or to the sweep that ran
shorter lengths first in the same process (whose optimizer states and cached segments were laid
out by those lengths)? And what did the caching allocator hold when a step ran out?

    python3 measure_fresh.py run CONFIG SEQ [--expandable] [--history] [--limit-gib G] [--trainer]
    python3 measure_fresh.py plan NAME DEADLINE_S     # a plan below, each run a child process

A run builds the model and optimizer as measure_loops.Run does, then runs the same steps as
its first length: a warm-up step (optimizer states appear), a step with the peak read per phase,
two timed steps. `--expandable` sets PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (in the
child's environment, before CUDA starts). `--history` records the allocator's history
(torch.cuda.memory._record_memory_history) and, at an out-of-memory error, summarises the
snapshot taken inside the handler, while the failing step's tensors are still referenced by
the traceback: reserved, allocated, the free bytes inside segments that still hold live blocks
(which release_cached_blocks cannot give back) and which code allocated those live blocks.
`--limit-gib` caps the allocator with torch.cuda.set_per_process_memory_fraction (an H100's
capacity on an H200). `--trainer` runs a case of measure_trainer.py instead of a loop config.
Appends one row per run to $OUT/fresh.jsonl.
"""
import gc
import gzip
import json
import os
import pickle
import subprocess
import sys
import time

OUT = os.environ.get("OUT", "/tmp/out")
GIB = 2 ** 30
# H100 80GB HBM3 as h100_hf_trainer_steps.jsonl saw it: 79.18 GiB total, of which the CUDA context
# took about 0.5 GiB (t02's error: 69.26 GiB in use by the process, 9.91 free) -- the allocator's cap
H100_ALLOCATOR_GIB = 79.18 - 0.5

# (config or trainer case, seq, flags), most wanted first: L12 ran its first step at 29696-32768
# tokens and ran out in a later one after a sweep from 4096; L13 and L06 fit at 95% of capacity
# and ran out one bisection step above; t02 ran out on the H100 with 9.9 GiB free.
CAUSES = [
    ("L12", 29696, ["--history"]),
    ("L12", 29696, ["--expandable"]),
    ("L12", 32768, ["--expandable"]),
    ("L12", 30720, []),
    ("L13", 9728, []),
    ("L13", 9728, ["--expandable"]),
    ("L06", 24576, []),
    ("L06", 24576, ["--expandable"]),
    ("t02", 8192, ["--trainer", "--limit-gib", str(H100_ALLOCATOR_GIB), "--history"]),
    ("t02", 8192, ["--trainer", "--limit-gib", str(H100_ALLOCATOR_GIB), "--expandable"]),
    ("L12", 32768, []),
    ("L12", 28672, ["--history"]),
]
# each sweep's longest length that fit, fresh with the default allocator (did it fit only because of
# the sweep's history?), and its shortest that ran out, with expandable segments (how far the
# boundary moves); L07 and L08 need bitsandbytes, L04, L05, L10 never ran out
SWEEP_FITS = [(c, s, []) for c, s in (("L13", 9216), ("L06", 23552), ("L01", 9216), ("L02", 15872), ("L11", 8192),
                                       ("L03", 5888))] + \
             [(c, s, ["--expandable"]) for c, s in (("L01", 9728), ("L02", 16384), ("L11", 8704), ("L03", 6144))] + \
             [("L09", 23552, [])]
PLANS = {"causes": CAUSES, "sweep-fits": SWEEP_FITS}
PICKLES_KEPT = 3          # $OUT returns at most 8 files


def frame_key(frames):
    """The first two frames outside torch itself: the code that asked for the block."""
    own = [f"{os.path.basename(f['filename'])}:{f['line']}:{f['name']}" for f in frames or []
           if "/torch/" not in f["filename"] and "<" not in f["filename"]]
    return " < ".join(own[:2]) or "?"


def summarise(snapshot):
    """Reserved, allocated and stranded bytes of the large pool, from a memory snapshot: a
    segment's free blocks can serve a request only if one of them is large enough, and a segment
    holding any live block cannot be given back to CUDA (CUDACachingAllocator
    release_cached_blocks frees whole unused segments only)."""
    segs = snapshot["segments"]
    reserved = sum(s["total_size"] for s in segs)
    allocated = sum(s["allocated_size"] for s in segs)
    stranded, largest_free, owners, partly = 0, 0, {}, 0
    for s in segs:
        free_blocks = [b["size"] for b in s["blocks"] if b["state"] == "inactive"]
        largest_free = max([largest_free] + free_blocks)
        if s["allocated_size"] and free_blocks:
            partly += 1
            stranded += sum(free_blocks)
            for b in s["blocks"]:
                if b["state"] != "inactive":
                    k = frame_key(b.get("frames"))
                    owners[k] = owners.get(k, 0) + b["size"]
    top = sorted(owners.items(), key=lambda kv: -kv[1])[:12]
    return dict(segments=len(segs), partly_used_segments=partly, reserved_bytes=reserved,
                allocated_bytes=allocated, stranded_free_bytes=stranded, largest_free_block_bytes=largest_free,
                live_blocks_in_partly_used_segments={k: v for k, v in top},
                segment_sizes_gib=sorted((round(s["total_size"] / GIB, 3), round(s["allocated_size"] / GIB, 3))
                                         for s in segs if s["total_size"] >= 256 * 2 ** 20))


def stats_row(torch):
    st = torch.cuda.memory_stats()
    keys = ("allocated_bytes.all.peak", "reserved_bytes.all.peak", "inactive_split_bytes.all.peak",
            "allocated_bytes.all.current", "reserved_bytes.all.current", "inactive_split_bytes.all.current",
            "num_alloc_retries", "num_ooms")
    return {k: st.get(k) for k in keys}


def run(argv):
    cid, seq = argv[0], int(argv[1])
    expandable, history, trainer = "--expandable" in argv, "--history" in argv, "--trainer" in argv
    limit = float(argv[argv.index("--limit-gib") + 1]) if "--limit-gib" in argv else None
    import torch
    import transformers
    os.makedirs(OUT, exist_ok=True)
    free, total = torch.cuda.mem_get_info()
    row = dict(config=cid, seq=seq, process="fresh", device=torch.cuda.get_device_name(0), total_bytes=total,
               allocator="expandable_segments" if expandable else "default", torch=torch.__version__,
               transformers=transformers.__version__)
    if limit:
        torch.cuda.set_per_process_memory_fraction(limit * GIB / total)
        row["allocator_limit_bytes"] = int(limit * GIB)
    if history:
        torch.cuda.memory._record_memory_history(max_entries=100000, stacks="python")
    where, snap = "build", None
    t0 = time.perf_counter()
    try:
        if trainer:
            where = "trainer"
            trainer_case(cid, seq, row, torch)
        else:
            loop_case(cid, seq, row, torch)
    except torch.OutOfMemoryError as e:
        where = row.pop("_where", where)
        row["error"] = f"OutOfMemoryError in {where}: " + str(e)[:600]
        row["at_oom"] = stats_row(torch)
        if history:
            snap = torch.cuda.memory._snapshot()
            row["at_oom"]["snapshot"] = summarise(snap)
    row.pop("_where", None)
    row["peak"] = stats_row(torch)
    row["wall_s"] = round(time.perf_counter() - t0, 1)
    with open(os.path.join(OUT, "fresh.jsonl"), "a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps({k: v for k, v in row.items() if k != "at_oom"}), flush=True)
    if snap is not None:
        kept = [n for n in os.listdir(OUT) if n.endswith(".pickle.gz")]
        if len(kept) < PICKLES_KEPT:
            snap.pop("device_traces", None)      # the segments are what a reader looks at; traces are large
            with gzip.open(os.path.join(OUT, f"{cid}_{seq}_{row['allocator']}.pickle.gz"), "wb") as f:
                pickle.dump(snap, f)


def loop_case(cid, seq, row, torch):
    from measure_loops import CONFIGS, Run
    r = Run(next(c for c in CONFIGS if c[0] == cid))
    row.update(r.row, seq=seq)
    x = torch.randint(0, r.vocab, (r.mbs, seq), device="cuda")
    row["_where"] = "warm-up"
    r.step(x)
    phases = {}
    row["_where"] = "phase step"
    r.step(x, phases)
    torch.cuda.synchronize()
    row["_where"] = "timed steps"
    t0 = time.perf_counter()
    for _ in range(2):
        r.step(x)
    torch.cuda.synchronize()
    row.update(peak_allocated_bytes=max(torch.cuda.max_memory_allocated(), *(phases[k] for k in ("forward", "backward", "optimizer"))),
               phase_peak_bytes={k: phases[k] for k in ("forward", "backward", "optimizer")},
               start_allocated_bytes=phases["start_allocated"], step_s=round((time.perf_counter() - t0) / 2, 4))


def trainer_case(cid, seq, row, torch):
    """measure_trainer.one's Trainer run, reading the out-of-memory error here rather than in one()."""
    from transformers import Trainer, TrainingArguments
    import measure_trainer as mt
    _, model, mode, wdt, s, b, ckpt, optim = next(c for c in mt.CASES if c[0] == cid)
    assert s == seq and mode == "full" and optim is None
    row.update(model=model, mode=mode, weights=wdt, mbs=b, ckpt=ckpt, optim="default")
    m, cfg = mt.build(model, torch.float32 if wdt == "fp32" else torch.bfloat16)
    args = TrainingArguments(output_dir="/tmp/trainer_out", per_device_train_batch_size=b, max_steps=5, bf16=True,
                             gradient_checkpointing=ckpt, save_strategy="no", logging_strategy="no", report_to="none",
                             disable_tqdm=True, dataloader_pin_memory=False, learning_rate=1e-5)
    Trainer(model=m, args=args, train_dataset=mt.Tokens(5 * b, s, cfg.vocab_size)).train()
    row["peak_allocated_bytes"] = torch.cuda.max_memory_allocated()


def plan(name, deadline_s):
    end = time.time() + deadline_s
    here = os.path.dirname(os.path.abspath(__file__))
    for cid, seq, flags in PLANS[name]:
        left = end - time.time()
        if left < 30:
            print(json.dumps(dict(skipped=[cid, seq, flags], left_s=round(left))), flush=True)
            continue
        env = dict(os.environ)
        if "--expandable" in flags:
            env["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
        try:
            p = subprocess.run([sys.executable, __file__, "run", cid, str(seq), *flags], cwd=here, env=env,
                               timeout=left, capture_output=True, text=True)
            if p.returncode:
                print(json.dumps(dict(failed=[cid, seq, flags], rc=p.returncode, stderr=p.stderr[-1500:])), flush=True)
            else:
                print(p.stdout.strip(), flush=True)
        except subprocess.TimeoutExpired:
            print(json.dumps(dict(timed_out=[cid, seq, flags])), flush=True)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    if sys.argv[1] == "plan":
        plan(sys.argv[2], float(sys.argv[3]))
    else:
        run(sys.argv[2:])
    gc.collect()
