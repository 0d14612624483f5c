"""torchtitan's own trainer (its `Trainer`, its llama3 debug model, its `parallelize_llama` and
`pipeline_llm`) on 4 CPU ranks over gloo, started by torchrun as its users start it.

spec["layout"]: "fsdp" (FSDP2 over the 4 ranks, torchtitan's dp_shard) or "pp" (2 pipeline
stages x 2 FSDP ranks each, 1F1B, 4 micro-batches). The work is torchtitan's own, on the CPU;
planted: slow_rank takes slow_factor times its own step time (SlowRank: sleeps in its blocks'
forwards and backwards, as a slow accelerator would).

torchtitan 0.3.0 trains on CUDA only; four run-time changes, in this file and nowhere else, let
it run on CPUs (none touches what the probe sees: the modules, the optimizer and every
collective are torchtitan's own):
- its device module answers for the CPU (`torchtitan.tools.utils.device_type/device_module`);
- FlexAttention has no backward on CPU: its compiled kernel is replaced by causal SDPA (the
  debug data has no document masks that would need more);
- FSDP2's gradient division by PREMUL_SUM is not in gloo: torchtitan's
  `disable_fsdp_gradient_division` is left out, so FSDP averages the gradients itself (AdamW is
  invariant to that constant factor, up to its epsilon);
- the tokenizer and the `c4_test` data it reads from its repository's tests/assets are written
  here (a word-level tokenizer of 2000 words, random text), per rank, before the trainer starts.
"""
from __future__ import annotations

import json
import os
import random
import statistics
import sys
import types

from fw_job import StepClock, load_spec, write_result

spec = load_spec()

RANK = int(os.environ["RANK"])
HERE = os.path.join(spec["out"], f"torchtitan_rank{RANK}")
os.makedirs(HERE, exist_ok=True)
os.chdir(HERE)  # torchtitan reads ./tests/assets and writes ./outputs
os.environ["HF_DATASETS_CACHE"] = os.path.join(HERE, "hf_cache")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402



def write_assets() -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers
    os.makedirs("tests/assets/tokenizer", exist_ok=True)
    os.makedirs("tests/assets/c4_test", exist_ok=True)
    vocab = {"<unk>": 0, "<|begin_of_text|>": 1, "<|end_of_text|>": 2}
    vocab.update({f"w{i}": 3 + i for i in range(2000)})
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.save("tests/assets/tokenizer/tokenizer.json")
    with open("tests/assets/tokenizer/tokenizer_config.json", "w") as f:
        json.dump({"bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>"}, f)
    rng = random.Random(0)
    with open("tests/assets/c4_test/data.json", "w") as f:
        for _ in range(400):
            f.write(json.dumps({"text": " ".join(f"w{rng.randrange(2000)}" for _ in range(200))}) + "\n")


class _CpuProperties:
    total_memory = 1 << 34
    name = "cpu"


class CpuDeviceModule(types.ModuleType):
    """The torch.cuda calls torchtitan makes, answered for the CPU."""

    def __getattr__(self, name: str):
        return getattr(torch.cpu, name)

    def get_device_name(self, *args) -> str:
        return "cpu"

    def current_device(self) -> int:
        return 0

    def device_count(self) -> int:
        return 1

    def set_device(self, *args) -> None:
        pass

    def synchronize(self, *args) -> None:
        pass

    def empty_cache(self) -> None:
        pass

    def reset_peak_memory_stats(self, *args) -> None:
        pass

    def memory_stats(self, *args) -> dict:
        return {}

    def get_device_properties(self, *args) -> _CpuProperties:
        return _CpuProperties()


def causal_sdpa(q, k, v, *, score_mod, block_mask, scale, enable_gqa, return_aux, kernel_options):  # noqa: ANN001
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale, enable_gqa=enable_gqa)
    return out, types.SimpleNamespace(lse=None, max_scores=None)


def patch_torchtitan_for_cpu() -> None:
    import torchtitan.tools.utils as tu
    tu.device_type, tu.device_module = "cpu", CpuDeviceModule("torchtitan_cpu_device")
    import torchtitan.distributed.parallel_dims as parallel_dims
    parallel_dims.device_type = "cpu"
    from torchtitan.models.common import attention
    attention.FlexAttention.compiled_flex_attn = staticmethod(causal_sdpa)
    import torchtitan.distributed.fsdp as fsdp
    fsdp.disable_fsdp_gradient_division = lambda model: None


class SlowRank:
    """slow_rank takes slow_factor times its own step: from step WARMUP on, its transformer
    blocks sleep (slow_factor - 1) x its median step time over the steps before (the first, which
    holds the start-up, left out), a third in their forwards and two thirds in their backwards
    (workload.SleepOp), spread evenly over the blocks' calls of a step (micro-batches included).
    The other ranks do torchtitan's work only."""

    WARMUP = 3

    def __init__(self, clock: StepClock) -> None:
        self.clock = clock
        self.calls = 0           # block forwards so far
        self.calls_per_step = 0
        self.fwd_s = self.bwd_s = 0.0
        self.on = RANK == spec.get("slow_rank", -1)

    def block_input(self, module, args):  # noqa: ANN001, ANN201
        from workload import SleepOp
        self.calls += 1
        if not (self.on and self.fwd_s + self.bwd_s > 0 and args and torch.is_tensor(args[0])):
            return None
        return (SleepOp.apply(args[0], self.fwd_s, self.bwd_s),) + tuple(args[1:])

    def after_step(self) -> None:
        steps = len(self.clock.times)
        if steps == 1:
            self.calls_per_step = self.calls
        if self.on and steps == self.WARMUP:
            typical = statistics.median(self.clock.times[1:])
            extra = (spec["slow_factor"] - 1) * typical / max(1, self.calls_per_step)
            self.fwd_s, self.bwd_s = extra / 3, 2 * extra / 3


def plant_slow_rank(clock: StepClock) -> SlowRank:
    from torchtitan.models.llama3.model import Llama3TransformerBlock
    slow = SlowRank(clock)

    def block_input(module, args):  # noqa: ANN001, ANN202
        return slow.block_input(module, args) if isinstance(module, Llama3TransformerBlock) else None

    torch.nn.modules.module.register_module_forward_pre_hook(block_input)
    return slow


def trainer_args() -> list[str]:
    args = ["--module", "llama3", "--config", "llama3_debugmodel",
            "--training.steps", str(spec["steps"]), "--training.seq_len", "64",
            "--training.local_batch_size", "4", "--metrics.log_freq", "10",
            # one loss chunk: the debug model's 2048 words in 64 tokens need no chunking
            "--loss.num-chunks", "1",
            # FSDP's bfloat16 parameters are a GPU's choice; CPUs without bf16 units take
            # several times longer for them
            "--training.mixed-precision-param", "float32",
            # a fixed seed: the same initial weights in every run, so that runs with and without
            # the probe can be compared loss for loss (bench/frameworks: "same loss")
            "--debug.seed", "0"]
    if spec.get("layout", "fsdp") == "pp":
        args += ["--parallelism.pipeline_parallel_degree", "2",
                 "--parallelism.pipeline_parallel_schedule", "1F1B",
                 "--parallelism.pipeline_parallel_microbatch_size", "1",
                 "--training.disable_cuda_graphs"]
    # no activation checkpointing: nothing to save on a model this small, and its recompute
    # would double the backward (a subcommand: last)
    return args + ["activation-checkpoint:none"]


def main() -> None:
    torch.set_num_threads(1)
    write_assets()
    patch_torchtitan_for_cpu()
    from torchtitan.trainer import Trainer
    clock = StepClock()
    slow = plant_slow_rank(clock)
    train_step, close, forward_backward = Trainer.train_step, Trainer.close, Trainer.forward_backward_step
    last_loss = [float("nan")]

    def forward_backward_step(self, *args, **kwargs):  # noqa: ANN001, ANN202
        loss = forward_backward(self, *args, **kwargs)
        last_loss[0] = float(loss.detach().sum())  # -1 on a pipeline stage without the loss
        return loss

    def timed_train_step(self, *args, **kwargs):  # noqa: ANN001, ANN202
        result = train_step(self, *args, **kwargs)
        clock.tick()  # the job's own clock: one tick per torchtitan step
        slow.after_step()
        return result

    def close_after_result(self) -> None:  # noqa: ANN001
        # the probe's report before torchtitan tears the process group down
        write_result(spec, RANK, clock.times[-spec["steps"]:], loss=last_loss[0])
        close(self)

    Trainer.train_step, Trainer.close = timed_train_step, close_after_result
    Trainer.forward_backward_step = forward_backward_step
    sys.argv = [sys.argv[0]] + trainer_args()
    from torchtitan.train import main as torchtitan_main
    torchtitan_main()


if __name__ == "__main__":
    main()
