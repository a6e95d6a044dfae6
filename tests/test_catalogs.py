"""Catalog names as users type them, a source for every entry, nearest-name suggestions."""
import pytest

from shardwise.kb import catalog
from shardwise.kb.errors import InputError
from shardwise.kb.counts import parse_count
from shardwise.kb.infer import infer_model
from shardwise.kb.params import total_params

REQUIRED_GPUS = ["a100-40gb", "a100-80gb", "h100-sxm", "h100-pcie", "h100-nvl", "h200", "b200", "gb200", "l40s",
                 "mi300x", "mi325x", "mi355x"]
REQUIRED_MODELS = ["llama-3-70b", "llama-3-8b", "llama-3.1-405b", "mixtral-8x7b", "gpt-3-175b", "bloom-176b",
                   "falcon-180b", "llama-2-70b", "deepseek-v3", "qwen2.5-7b"]
REQUIRED_LINKS = ["nvlink3", "nvlink4", "nvlink5", "pcie4", "pcie5", "infiniband-hdr", "infiniband-ndr",
                  "infiniband-xdr", "roce-400g", "ethernet-100g"]


def test_required_entries_exist_with_sources():
    for n in REQUIRED_GPUS:
        g = catalog.gpu(n)
        assert g.source and g.memory_gib > 0 and g.tflops_bf16 > 0
    for n in REQUIRED_MODELS:
        assert catalog.model(n).source
    for n in REQUIRED_LINKS:
        assert catalog.link(n).source


def test_every_catalog_entry_has_a_source():
    for section, names in (("gpus", catalog.gpu_names()), ("models", catalog.model_names()),
                           ("links", catalog.link_names())):
        for n in names:
            assert catalog.raw(section)[section][n].get("source"), f"{section}/{n} has no source"


def test_a_gpus_memory_is_the_total_its_source_quotes_from_the_driver():
    """memory_gib is what the driver reports as total (kb/data/gpus.yaml): where the source quotes
    nvidia-smi's MiB or rocm-smi's bytes, the catalog holds that figure in GiB, not a rounder one --
    the fit margin is a few percent of it."""
    import re
    quoted = 0
    for n in catalog.gpu_names():
        src = catalog.raw("gpus")["gpus"][n]["source"]
        smi, rocm = re.search(r"(\d{5,6})MiB", src), re.search(r"rocm-smi total (\d+) B", src)
        if not (smi or rocm):
            continue
        quoted += 1
        gib = int(smi.group(1)) / 1024 if smi else int(rocm.group(1)) / 2 ** 30
        assert catalog.gpu(n).memory_gib == pytest.approx(gib, abs=0.05), n
    assert quoted >= 12


def test_the_link_kinds_rules_may_compare_are_those_of_the_catalog():
    """kb/fact_schema.VALUES lists the values of cluster.intra_kind / inter_kind so that a rule
    comparing them with a typo is refused; a link added to the catalog must be added there."""
    from shardwise.kb.fact_schema import VALUES
    from shardwise.kb.facts import _intra_kind
    links = [catalog.link(n) for n in catalog.link_names()]
    assert set(VALUES["cluster.intra_kind"]) == {_intra_kind(ln.name) for ln in links if ln.kind == "intra"}
    assert set(VALUES["cluster.inter_kind"]) == {ln.name.split("-")[0] for ln in links if ln.kind == "inter"}


def test_mi355x_is_cdna4_at_twice_the_mi300x_tensor_rate_on_its_own_fabric():
    """An MI355X team got 'unknown GPU': the catalog now has it as AMD's datasheet gives it --
    288 GB, 8 TB/s, dense BF16 2.5 PF and FP8 twice that (256 CUs at 2.4 GHz, against the MI300X's
    304 at 2.1 GHz and half the matrix rate a CU), on a fourth-generation Infinity Fabric whose
    seven links are faster than the MI300X's, still a mesh without a switch."""
    mi355, mi300 = catalog.gpu("mi355x"), catalog.gpu("mi300x")
    assert mi355.memory_gib > 1.4 * mi300.memory_gib and mi355.hbm_gbps == 8000
    assert mi355.peak_tflops("fp8") == pytest.approx(2 * mi355.peak_tflops("bf16"))
    assert mi355.peak_tflops("bf16") / mi300.peak_tflops("bf16") == pytest.approx(256 * 2.4 * 2 / (304 * 2.1), rel=1e-3)
    fabric = catalog.link(mi355.intra_link)
    assert fabric.kind == "intra" and fabric.peer_gbps == pytest.approx(153.6 / 2)
    assert fabric.gbps == pytest.approx(7 * fabric.peer_gbps)
    assert fabric.peer_gbps > catalog.link(mi300.intra_link).peer_gbps
    assert not mi355.mxfp8          # the flag gates NVIDIA's Blackwell-only recipes
    assert not mi355.speed_checked_on and mi355.sustained_share == 1.0


def test_a_gpus_vendor_is_its_makers_and_decides_whether_it_runs_rocm():
    """GPUSpec.rocm knew an AMD GPU by its Infinity Fabric link name; a GPU's vendor is a fact
    about the GPU (kb/data/gpus.yaml vendor), which the part's name carries. Every catalog GPU has
    one, the AMD ones are the three Instinct parts that ran ROCm before, and an AMD card on PCIe
    (an MI210, say) runs ROCm's kernels too, where the link name had it take NVIDIA's."""
    for n in catalog.gpu_names():
        vendor, part = catalog.gpu(n).vendor, catalog.raw("gpus")["gpus"][n]["name"]
        assert part.startswith({"nvidia": "NVIDIA ", "amd": "AMD "}[vendor]), (n, vendor, part)
    assert {n for n in catalog.gpu_names() if catalog.gpu(n).rocm} == {"mi300x", "mi325x", "mi355x"}
    on_pcie = catalog.gpu("mi300x").model_copy(update={"intra_link": "pcie5"})
    assert on_pcie.rocm and not catalog.gpu("h100-pcie").rocm


def test_a_gpus_architecture_is_its_parts_and_agrees_with_what_else_the_catalog_knows():
    """kb/data/gpus.yaml arch decides the kernel builds a GPU runs (FlashAttention-3 on Hopper
    alone). Each entry's architecture is its part's: the H100 / H200 / H800 parts are Hopper, the
    B / GB parts Blackwell -- exactly the GPUs with microscaled FP8 tensor cores (mxfp8) -- the
    A100 and A10 Ampere, the L4 / L40S / RTX ones Ada, and the AMD parts CDNA."""
    by_part = {"hopper": ("H100", "H200", "H800"), "blackwell": ("B200", "B300", "GB200", "GB300"),
               "ampere": ("A100", "A10 "), "ada": ("L40S", "L4 ", "RTX"), "cdna3": ("MI300X", "MI325X"),
               "cdna4": ("MI355X",)}
    for n in catalog.gpu_names():
        g, part = catalog.gpu(n), catalog.raw("gpus")["gpus"][n]["name"]
        assert any(p in part for p in by_part[g.arch]), (n, g.arch, part)
        assert g.mxfp8 == (g.arch == "blackwell"), n
        assert g.rocm == g.arch.startswith("cdna"), n


@pytest.mark.parametrize("vendor", ["intel", "NVIDIA", "", None])
def test_a_gpu_of_no_known_vendor_is_refused_not_taken_as_nvidia(vendor):
    """The schema takes nvidia or amd and nothing else, and has no default: a GPU entry without
    one, or with another maker, would otherwise be told NVIDIA-only kernels."""
    from pydantic import ValidationError
    from shardwise.kb.schema import GPUSpec
    d = catalog.gpu("h100-sxm").model_dump()
    if vendor is None:
        del d["vendor"]
    else:
        d["vendor"] = vendor
    with pytest.raises(ValidationError) as refused:
        GPUSpec.model_validate(d)
    assert [(e["loc"], e["type"]) for e in refused.value.errors()] == \
        [(("vendor",), "missing" if vendor is None else "literal_error")], refused.value.errors()
    if vendor is not None:
        assert "'nvidia' or 'amd'" in refused.value.errors()[0]["msg"]


def test_unknown_names_suggest_the_nearest():
    with pytest.raises(InputError, match="did you mean .*h100-sxm"):
        catalog.gpu("h100-sxn")
    with pytest.raises(InputError, match="did you mean .*llama-3-70b"):
        catalog.model("llama3-70b")


@pytest.mark.parametrize("typed,first", [
    ("llama4", ["llama-4-maverick", "llama-4-scout"]), ("qwen3coder", ["qwen3-coder-480b-a35b"]),
    ("gemma3-12b", ["gemma-3-12b"]), ("phi4mini", ["phi-4-mini"]), ("gemma_3_27b", ["gemma-3-27b"])])
def test_unknown_model_names_suggest_the_models_they_spell_without_separators(typed, first):
    """'--model llama4' suggested llama-4-scout and never llama-4-maverick: the names the typed one
    begins were matched with their hyphens, so only string similarity found one Llama 4. The
    suggestions now compare names without '-', '_' and '.', every model the name begins first."""
    with pytest.raises(InputError) as e:
        catalog.model(typed)
    said = str(e.value).split("did you mean ")[1].split("?")[0].split(", ")
    assert said[:len(first)] == first, said


def test_an_unknown_gpu_typed_without_its_hyphen_suggests_the_card():
    with pytest.raises(InputError, match="did you mean h100-sxm,"):
        catalog.gpu("h100sxm")


def test_fp8_is_refused_on_gpus_without_fp8():
    g = catalog.gpu("a100-80gb")
    with pytest.raises(ValueError, match="no FP8"):
        g.peak_tflops("fp8")
    assert catalog.gpu("h100-sxm").peak_tflops("fp8") == pytest.approx(2 * catalog.gpu("h100-sxm").peak_tflops("bf16"), rel=0.01)


@pytest.mark.parametrize("text,value", [("70B", 70e9), ("1.5T", 1.5e12), ("350M", 350e6), ("7000000000", 7e9)])
def test_parse_count(text, value):
    assert parse_count(text) == value


def test_parse_count_takes_no_exponent_and_writes_the_number_out():
    with pytest.raises(InputError, match=r"^--params: '7e9': write the number with digits, e.g. 7000000000 or 7B$"):
        parse_count("7e9")
    assert parse_count(7e9) == parse_count(1e16) / 1e16 * 7e9 == 7e9     # a number the code passes is no text


@pytest.mark.parametrize("text,short", [("7e10", "70B"), ("1e15", "1000T"), ("1e13", "10T"), ("1.5e12", "1.5T"),
                                        ("2.5e4", "25K")])
def test_exponent_refusal_names_the_same_count_in_short(text, short):
    # the short form a refusal offers must be the number itself: '7e10' once read '... or 7B', ten times too few
    with pytest.raises(InputError, match=rf" or {short}$"):
        parse_count(text, "--token-budget")
    assert parse_count(short) == float(text)


@pytest.mark.parametrize("n", [1e9, 8e9, 70e9, 405e9, 1e12])
def test_inferred_shape_is_within_3_percent_of_the_count_and_says_so(n):
    m = infer_model(n)
    assert m.inferred and "inferred" in m.source
    assert abs(total_params(m) / n - 1) < 0.03
    assert m.heads % m.kv_heads == 0 and m.hidden % m.heads == 0


@pytest.mark.parametrize("bad", ["0", "-5B", "abc", "5Q"])
def test_bad_counts_are_refused(bad):
    with pytest.raises(InputError):
        parse_count(bad)


def test_every_catalog_model_names_its_norm_epsilon():
    """norm_eps has a default (1e-5, Megatron's) for a --params model; a catalog entry that left it
    out would hand a Qwen or Gemma export 1e-5 where the model trains with 1e-6."""
    entries = catalog.raw("models")["models"]
    assert [n for n, e in entries.items() if "norm_eps" not in e] == []
    assert catalog.model("qwen3-8b").norm_eps == 1e-6 and catalog.model("llama-3.1-8b").norm_eps == 1e-5


@pytest.mark.parametrize("typed", ["a100-sxm", "a100-sxm4", "A100-80G"])
def test_an_unknown_gpu_suggests_the_cards_of_its_first_word_first(typed):
    """'--gpu a100-sxm', as an A100 SXM owner types it, begins no catalog name, and string
    similarity offered h100-sxm and a10 first. The names sharing its leading words come first."""
    with pytest.raises(InputError) as e:
        catalog.gpu(typed)
    said = str(e.value).split("did you mean ")[1].split("?")[0].split(", ")
    assert set(said[:3]) == {"a100-40gb", "a100-80gb", "a100-80gb-pcie"}, said
