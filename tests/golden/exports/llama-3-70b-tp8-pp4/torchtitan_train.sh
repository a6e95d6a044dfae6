# shardwise export: llama-3-70b on 32 x h100-sxm (4 nodes of 8), seq 8192, pretrain bf16
# layout: tp=8 pp=4 dp=1 zero=0 sp=on mbs=4 ga=128 recompute=full; global batch 512 sequences
# cannot express: torchtitan's llama3_70b applies llama3 RoPE scaling; llama-3-70b has none (config.json rope_scaling): change the rope in a copy of the registry entry; same shapes, other numerics
# train steps: torchtitan's default --training.steps (give --token-budget and the export counts them)
# 4 nodes: run_train.sh starts one; on each node run torchrun --nnodes 4 --nproc_per_node 8 --rdzv_backend c10d --rdzv_endpoint $HEAD_NODE:29500 -m torchtitan.train --module llama3 --config llama3_70b with these flags (torchtitan's multinode_trainer.slurm)
NGPU=8 MODULE=llama3 CONFIG=llama3_70b ./run_train.sh \
  --parallelism.data_parallel_replicate_degree 1 \
  --parallelism.data_parallel_shard_degree 1 \
  --parallelism.fsdp_reshard_after_forward never \
  --parallelism.tensor_parallel_degree 8 \
  --parallelism.enable_sequence_parallel \
  --compile.enable \
  --compile.components model,loss \
  --compile.enable_async_tensor_parallel \
  --parallelism.pipeline_parallel_degree 4 \
  --parallelism.pipeline_parallel_schedule 1F1B \
  --parallelism.pipeline_parallel_microbatch_size 4 \
  --parallelism.context_parallel_degree 1 \
  --parallelism.expert_parallel_degree 1 \
  --training.local_batch_size 512 \
  --training.global_batch_size 512 \
  --training.seq_len 8192 \
  --training.mixed_precision_param bfloat16 \
  --training.disable_cuda_graphs \
  activation-checkpoint:full
