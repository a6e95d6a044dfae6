"""Cluster sizing: for a job that fits nowhere, the smallest GPU count, and the GPUs, that would.

The count is searched over powers of two below one node, then over whole nodes: the node count
doubles (1, 2, 4, ... nodes: the counts whose degrees divide heads, layers and batches best)
until some layout fits within the memory margin and the policies; then up to SCAN evenly spaced
node counts between the last that failed and the first that fitted are tried from the smallest,
and the interval where the first fits is bisected. Divisibility (heads, layers, the global
batch) makes fitting non-monotone in the count -- 5, 9 or 17 nodes can fail where 4 fit -- so
the walk never steps on odd multiples to decide where to go (bisecting straight over every node
count from 1 did, and sized a 1M-token 8B job that fits on 4 nodes at 1,088); the answer is the
smallest count it found.
"""
from __future__ import annotations

import numpy as np

from shardwise.kb import catalog
from shardwise.kb.build import check_training
from shardwise.kb.errors import InputError
from shardwise.kb.facts import job_facts
from shardwise.kb.job import Job
from shardwise.kb.resolve import global_batch

from .table import apply_constraints, scored_table

MAX_GPUS = 16384          # the largest --gpus kb/build.py accepts


def node_size(c) -> int:
    """GPUs per node: the cluster's own when it spans nodes; when the job is one node or less
    (kb/build.py caps gpus_per_node at the GPU count), the --gpus-per-node the user gave, else the
    GPU's usual server -- a count in 8-GPU servers for nodes of 6 is refused as not whole nodes."""
    if c.gpus > c.gpus_per_node:
        return c.gpus_per_node
    return c.node_given or c.gpu.gpus_per_node


def with_cluster(job: Job, gpus: int, gpu=None, node: int | None = None) -> Job:
    c = job.cluster
    g = gpu or c.gpu
    node = node or (node_size(c) if gpu is None else g.gpus_per_node)
    update = {"gpus": gpus, "gpus_per_node": min(node, gpus)}
    if gpu is not None:
        update.update(gpu=g, intra=catalog.link(g.intra_link))
    return Job(job.model, c.model_copy(update=update), job.training)


def fits_somewhere(job: Job, constraints, pins=None, rules=None) -> bool:
    """Whether some layout of micro-batch 1 meets every hard constraint on this cluster, and
    fits in the GPU's memory whatever the rules say (decision/run.py). ``rules``: where given, a
    function of a job giving its own hard constraints and pins (decision/run._rules_for), used
    in place of ``constraints`` and ``pins``: a house policy whose condition reads what a way
    changes (``when: train.training == 'lora'``, ``cluster.gpus > 64``) binds the job so changed,
    as it would when the user runs it; a job whose pins clash (InputError) fits nowhere."""
    if rules is not None:
        try:
            constraints, pins = rules(job)
        except InputError:
            return False
    gb, _ = global_batch(job)
    t = scored_table(job, gb, pins, fit_only=True)
    t.facts = job_facts(job, gb).__getitem__
    # judged only where the layout fits the GPU: the probe leaves the speed of the rest at 0
    # (search/score.score, fit_only), so a policy reading it -- a budget dividing by
    # metrics.tokens_per_s -- had no value there and refused the job as a faulty rule
    rows = np.flatnonzero(t.peak_gib <= t.capacity)
    return bool(len(rows)) and bool(apply_constraints(t, constraints, rows)[0].any())


def fits_with(job: Job, update: dict, constraints=(), pins=None, rules=None) -> bool:
    """Whether the job, its training changed by ``update`` (another framework, kernel, allocator
    or recipe), fits somewhere on its own GPUs (fits_somewhere); what build_job would refuse for
    those flags (QLoRA on Megatron, a framework's recompute modes, ...) is no way to fit."""
    other = job.training.model_copy(update=update)
    try:
        check_training(job.model, job.cluster.gpu, other)
        return fits_somewhere(Job(job.model, job.cluster, other), constraints, pins, rules)
    except InputError:
        return False


# node counts tried evenly between the last failure and the first fit before bisecting: a search
# setting, not a measurement -- enough that a gap of 512 nodes is sampled every 64, few enough
# that a refusal costs at most eight more scored tables than bisection alone
SCAN = 8


def smallest_count(job: Job, constraints=(), pins=None, rules=None) -> int | None:
    c = job.cluster
    node = node_size(c)

    def fits(n: int) -> bool:
        return fits_somewhere(with_cluster(job, n), constraints, pins, rules)
    for n in (1, 2, 4, 8, 16, 32, 64):
        if c.gpus < n < node and fits(n):
            return n
    last = MAX_GPUS // node                      # node counts: 1 .. last
    lo = c.gpus // node                          # fails: the job's own count (or less than a node)
    hi = 1
    while hi <= lo:
        hi *= 2
    while hi < last and not fits(node * hi):     # doubling
        lo, hi = hi, 2 * hi
    if hi >= last:
        hi = last
        if hi <= lo or not fits(node * hi):
            return None
    step = max(1, (hi - lo) // SCAN)             # the smallest of a few evenly spaced counts that fits
    for k in range(lo + step, hi, step):
        if fits(node * k):
            hi = k
            break
        lo = k
    while hi - lo > 1:                           # bisection between a failing and a fitting count
        mid = (lo + hi) // 2
        if fits(node * mid):
            hi = mid
        else:
            lo = mid
    return node * hi


def other_gpu_node(c, g) -> int | None:
    """GPUs per node for this cluster's GPU count on catalog GPU ``g``: its usual server where
    that divides the count (or holds all of it); else the cluster's own node size where the
    count spans such nodes and ``g``'s link joins that many (the bound kb/schema.ClusterSpec
    sets) -- 12 GPUs in nodes of 4 are 12 B200s in nodes of 4, not no B200s because 8 does not
    divide 12; None where neither builds the cluster."""
    if c.gpus <= g.gpus_per_node or c.gpus % g.gpus_per_node == 0:
        return g.gpus_per_node
    own = c.gpus_per_node
    if c.gpus % own == 0 and (g.intra_link.startswith("pcie") or own <= g.link_joins):
        return own
    return None


def gpus_that_fit(job: Job, constraints=(), pins=None, rules=None) -> list[str]:
    """Catalog GPUs on which the job fits at its own GPU count (other_gpu_node: in which nodes)."""
    out = []
    for name in catalog.gpu_names():
        g = catalog.gpu(name)
        if name == job.cluster.gpu.name or (job.training.precision == "fp8" and not g.tflops_fp8):
            continue
        node = other_gpu_node(job.cluster, g)
        if node and fits_somewhere(with_cluster(job, job.cluster.gpus, g, node), constraints, pins, rules):
            out.append(name)
    return out


FRAMEWORKS = ("megatron", "fsdp", "deepspeed", "hf")
# torchtitan's chunked loss (ChunkedLossWrapper) at its default count, for a job that gave none
CHUNKS = 8


def frameworks_that_fit(job: Job, constraints=(), pins=None, rules=None) -> list[str]:
    """Where the framework was a default (not given), the others on which the job fits as it is,
    as the flags that select them: their memory differs by more than a few percent (the
    Trainer's whole fp32 logits against torchtitan's chunked loss, Megatron's sharded
    cross-entropy), so a job refused under the default may run unchanged under another.
    torchtitan is tried with its chunked loss too where the job gave no --loss-chunks."""
    t = job.training
    if "framework" not in t.defaulted:
        return []
    tries = []
    for fw in FRAMEWORKS:
        if fw != t.framework:
            tries.append((fw, {"framework": fw}, f"--framework {fw}"))
            if fw == "fsdp" and not t.loss_chunks and t.seq_len % CHUNKS == 0:
                tries.append((fw, {"framework": fw, "loss_chunks": CHUNKS}, f"--framework fsdp --loss-chunks {CHUNKS}"))
    out, done = [], set()
    for fw, update, flags in tries:
        if fw not in done and fits_with(job, update, constraints, pins, rules):
            out.append(flags)
            done.add(fw)
    return out


def attention_that_fits(job: Job, constraints=(), pins=None, rules=None) -> list[str]:
    """Where --attention sdpa runs the model's sliding-window or chunked layers through
    transformers' dense mask (kb/memory/activations.dense_local_mask) -- its [s, s] mask and
    repeated k/v kept, and DeepSpeed's Ulysses refused, as it would drop the mask
    (kb/validity.py ulysses-keeps-local-attention) -- FlashAttention applies the window itself
    (flash_attention_forward sliding_window=): the flag, where the job fits under it as it is.
    The job's own choice of kernel is kept for the count; this says what else would fit."""
    from shardwise.kb.memory.activations import dense_local_mask
    t = job.training
    if t.attention != "sdpa" or not dense_local_mask(job.model, t):
        return []
    return ["--attention flash"] if fits_with(job, {"attention": "flash"}, constraints, pins, rules) else []


def allocator_that_fits(job: Job, constraints=(), pins=None, rules=None) -> list[str]:
    """Where the estimate assumed PyTorch's caching allocator (kb/memory/overheads.allocator), the
    flag for expandable segments, which hold 1% of the dynamic memory near capacity rather than
    8%, where the job fits with them as it is (the exports then launch with them)."""
    from shardwise.kb.memory.overheads import allocator
    if allocator(job.training) != "caching":
        return []
    return ["--allocator expandable"] if fits_with(job, {"allocator": "expandable"}, constraints, pins, rules) else []


def recipes_that_fit(job: Job, constraints=(), pins=None, rules=None) -> list[str]:
    """Cheaper recipes of the same training, as the flags that choose them, where the job fits
    under them on its own GPUs. Under the Trainer, where the job left them to defaults: an 8-bit
    AdamW (its optim="adamw_bnb_8bit": bitsandbytes' AdamW8bit keeps 2 bytes of state a
    parameter where AdamW keeps 8, kb/memory/states.py), the model loaded in bf16 (pure-bf16: no
    fp32 weights under autocast; not for pre-training), then both; the other frameworks'
    exports run their own AdamW and mixed precision (export/optimizer.py), so none is named
    there. For a full fine-tune, LoRA, else QLoRA (PEFT: the base weights frozen, in bf16 or
    4-bit, with no optimizer state); for LoRA, QLoRA.
    Each changes the training, not only its cost, so it is named for the user to choose and
    never taken: the first that fits of each kind. build_job's refusals (QLoRA under Megatron,
    ...) rule a recipe out."""
    t = job.training
    kinds, leaner = [], []
    if t.framework == "hf":
        optimizer = "optimizer" in t.defaulted and t.optimizer.startswith("adamw") and t.optimizer != "adamw-8bit"
        # not for pre-training: bf16 weights round every update to nearest, so updates under half
        # a bf16 step are lost and from-scratch training falls short of fp32 master weights
        # (Zamirai et al. 2020, "Revisiting BFloat16 Training", arXiv:2010.06192); fine-tuning
        # from a checkpoint loads the model in bf16 as a matter of course
        precision = "precision" in t.defaulted and t.precision == "bf16" and t.training != "pretrain"
        if optimizer:
            leaner.append(({"optimizer": "adamw-8bit"}, "--optimizer adamw-8bit"))
        if precision:
            leaner.append(({"precision": "pure-bf16"}, "--precision pure-bf16"))
        if optimizer and precision:
            leaner.append(({"optimizer": "adamw-8bit", "precision": "pure-bf16"},
                           "--precision pure-bf16 --optimizer adamw-8bit"))
    if leaner:
        kinds.append(leaner)
    if t.training == "finetune":
        kinds.append([({"training": "lora"}, "--training lora"), ({"training": "qlora"}, "--training qlora")])
    elif t.training == "lora":
        kinds.append([({"training": "qlora"}, "--training qlora")])
    out = []
    for tries in kinds:
        first = next((flags for update, flags in tries if fits_with(job, update, constraints, pins, rules)), None)
        if first:
            out.append(first)
    return out


# the keys of sizing() that hold ways_by_kind's lists, in its order
WAY_KEYS = ("frameworks_that_fit", "attention_that_fits", "allocator_that_fits", "recipes_that_fit")


def ways_by_kind(job: Job, constraints=(), pins=None, rules=None) -> tuple[list, list, list, list]:
    """The flags under which the job fits on its own GPUs, by kind: another framework, attention
    kernel, allocator, leaner recipe (each function above; sizing() keeps them under WAY_KEYS)."""
    return (frameworks_that_fit(job, constraints, pins, rules), attention_that_fits(job, constraints, pins, rules),
            allocator_that_fits(job, constraints, pins, rules), recipes_that_fit(job, constraints, pins, rules))


def ways_clause(job: Job, ways: list[str]) -> str:
    """The ways as the user adds them to the command (_as_given), joined by "or"."""
    return " or ".join(_as_given(job, w) for w in ways)


def sizing(job: Job, constraints=(), pins=None, policies: bool = False, other_frameworks: bool = True,
           rules=None) -> dict:
    """``constraints`` include the memory margin; ``policies``: whether house policies are among
    them; ``other_frameworks``: whether to try the frameworks the job did not choose
    (frameworks_that_fit); ``rules``: each changed job's own constraints and pins
    (fits_somewhere)."""
    n = smallest_count(job, constraints, pins, rules)
    others = gpus_that_fit(job, constraints, pins, rules)
    by_kind = ways_by_kind(job, constraints, pins, rules) if other_frameworks else ([], [], [], [])
    ways = [w for kind in by_kind for w in kind]
    summary = _summary(job, n, others, ways, policies)
    return {"smallest_gpus": n, "gpus_that_fit": others, **dict(zip(WAY_KEYS, by_kind)),
            "summary": summary,
            # without the other GPUs: what a what-if of another memory size says (explain/why.py)
            "summary_same_gpu": _summary(job, n, [], ways, policies)}


def _as_given(job: Job, flags: str) -> str:
    """A way's flags as the user adds them to the command: a --training way replaces the job's
    own --training (the adapters are named for a finetune or a LoRA, never a default), as the CLI
    refuses a flag given twice (cli/main.refuse_repeats); the other ways are named only where
    their setting was a default, so they are added as they are, pure-bf16 with what it drops."""
    if flags.startswith("--training"):
        return f"{flags} (replacing --training {job.training.training})"
    if "--precision pure-bf16" in flags:
        # what the recipe gives up, said where it is offered: the fp32 master weights
        return f"{flags} (bf16 weights, no fp32 master copy)"
    return flags


def _summary(job: Job, n, others: list, frameworks: list, policies: bool) -> str:
    """One clause: where no count fits (under the job's framework or kernel, within the
    policies), then every way it would fit -- another framework or attention kernel on these
    GPUs (``frameworks``: their flags), more of them, another GPU."""
    g = job.cluster.gpus
    ways = []
    if frameworks:
        ways.append(f"on these {g} x {job.cluster.gpu.name} with {ways_clause(job, frameworks)}")
    if n:
        ways.append(f"on {n} x {job.cluster.gpu.name}")
    if others:
        ways.append(f"on {g} GPU{'s' if g > 1 else ''} of type {', '.join(others)}")
    summary = "it would fit " + ", or ".join(ways) if ways else ""
    if not n:
        none = (f"no count of {job.cluster.gpu.name} up to {MAX_GPUS} fits it"
                + (f" under --framework {job.training.framework}" if any(f.startswith("--framework") for f in frameworks)
                   else "")
                + (" with --attention sdpa" if "--attention flash" in frameworks else "")
                + (" under the caching allocator" if "--allocator expandable" in frameworks else "")
                + (" with the default precision and optimizer"
                   if any(f.startswith(("--optimizer", "--precision")) for f in frameworks) else "")
                + (" as a full fine-tune" if any(f.startswith("--training") for f in frameworks) else "")
                + (" within the house policies" if policies else ""))
        summary = none + ("; " + summary if summary else "")
    return summary
