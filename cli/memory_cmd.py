"""`shardwise memory --layout ...`: the per-GPU memory of one layout, by component."""
from __future__ import annotations

import click

from shardwise.decision.text import host_memory_label, hsdp_group
from shardwise.kb.track_record import checked_line, memory_checked_line

from .options import job_options
from .output import NO_BUDGET, cost_text, duration_text, emit, format_option, table, token_count


def _host_copies(mt: dict) -> str:
    """What of the exposed communication is offloading's host copies, where any is exposed."""
    share = 100 * mt["comm_exposed_s"].get("offload", 0.0) / mt["step_time_s"]
    if share < 0.05:
        return ""
    return f" (host copies of offloaded activations: {share:.1f}% of the step)"


def render_memory(result: dict) -> str:
    mem, lay, job = result["memory"], result["layout"], result["job"]
    head = (f"{job['model']} ({job['params_b']}B{', shape inferred' if job['shape_inferred'] else ''}) on "
            f"{job['gpus']} x {job['gpu']}  seq {job['seq_len']}  {job['training']} {job['precision']} ({job['framework']})\n"
            f"layout: tp={lay['tp']} pp={lay['pp']} vp={lay['vp']} dp={lay['dp']} cp={lay['cp']} ep={lay['ep']} "
            + (f"etp={lay['etp']} " if lay.get("etp", 1) != 1 else "")
            + f"zero={lay['zero_stage']} "
            # an HSDP group changes the peak: said as recommend's table and Layout.describe say it
            + (f"shard={group} " if (group := hsdp_group(lay)) else "")
            + f"sp={'on' if lay['sp'] else 'off'} mbs={lay['mbs']} ga={lay['grad_accum']} "
            f"gbs={lay['global_batch']} recompute={lay['recompute']}"
            + (f" offload={lay['offload']}" if lay.get("offload") else ""))
    rows = [[k.replace("_", " "), f"{v:.2f}"] for k, v in mem["breakdown_gib"].items() if v > 0.0005]
    rows.append(["peak (stage %d, %s)" % (mem["worst_stage"], mem["peak_phase"]), f"{mem['peak_gib']:.2f}"])
    rows.append(["capacity", f"{mem['capacity_gib']:.2f}"])
    if mem.get("host_offload_gib"):
        rows.append([host_memory_label(lay["offload"]), f"{mem['host_offload_gib']:.2f}"])
    broken = mem.get("broken_rules", [])
    # a rule on host memory (offload.fits-host-memory) is no matter of the estimate's error
    near = [b for b in broken if not b.startswith("offload.")]
    verdict = ("DOES NOT FIT" if not mem["fits"] else "fits only within the estimate's error" if near
               else "fits on the GPU" if broken else "fits")
    lines = [head, "", table(rows, ["memory per GPU", "GiB"]), "",
             f"{verdict}: {mem['peak_gib']:.1f} of {mem['capacity_gib']:.1f} GiB ({100 * mem['peak_gib'] / mem['capacity_gib']:.0f}%)"]
    lines += [f"the recommendation would refuse it: {b}" for b in broken if mem["fits"]]
    lines.append(memory_checked_line(mem["checked"]))
    mt = result["metrics"]
    lines += ["", table([
        ["step time", f"{mt['step_time_s']:.3f} s"],
        ["tokens/s (cluster)", f"{mt['tokens_per_s']:,.0f}"],
        ["tokens/s per GPU", f"{mt['tokens_per_s_per_gpu']:,.0f}"],
        ["model TFLOP/s per GPU", f"{mt['model_tflops_per_gpu']:.0f}"],
        ["MFU / HFU", f"{mt['mfu_pct']:.1f}% / {mt['hfu_pct']:.1f}%"],
        ["communication (exposed)", f"{mt['comm_overhead_pct']:.1f}% of the step" + _host_copies(mt)],
        ["pipeline bubble", f"{mt['bubble_pct']:.1f}% of the step"],
    ] + ([["time to train", f"{duration_text(mt)} for "
                             f"{token_count(mt['token_budget'])}"]]
         if mt.get("time_to_train_h") is not None else [["time to train", NO_BUDGET]])
      + ([["cost", cost_text(mt["cost"], mt["price_per_gpu_hour"])]] if "cost" in mt else []),
        ["time", "predicted"])]
    lines.append(checked_line(mt["checked"]))
    lines += [f"warning: {w}" for w in result.get("warnings", [])]
    lines += [f"note: {n}" for n in result.get("notes", [])]
    lines += [f"assumption: {a}" for a in result.get("assumptions", [])]
    return "\n".join(lines)


@click.command()
@job_options
@click.option("--layout", "layout_text", required=True,
              help='e.g. "tp=8,pp=4,dp=1,mbs=4,recompute=full" (dp defaults to the rest)')
@format_option
def memory(job, layout_text, fmt):
    """Memory per GPU (and its breakdown), step time, throughput and MFU for one layout."""
    from shardwise.decision.memory_rules import broken_memory_rules, layout_texts
    from shardwise.kb.facts import evaluate
    from shardwise.kb.memory import estimate_memory
    from shardwise.kb.perf import step_time
    from shardwise.kb.resolve import resolve_layout

    lay, assumptions = resolve_layout(job, layout_text)
    mem, st = estimate_memory(job, lay), step_time(job, lay)
    result = evaluate(job, lay, mem, st)
    result["memory"]["broken_rules"] = broken_memory_rules(job, lay, mem, st)
    result["warnings"], result["notes"] = layout_texts(job, lay, mem, st)
    result["assumptions"] = assumptions
    emit(result, fmt, lambda markdown: render_memory(result))
