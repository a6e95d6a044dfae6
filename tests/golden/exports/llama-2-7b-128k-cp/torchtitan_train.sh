# shardwise export: llama-2-7b on 64 x h100-sxm (8 nodes of 8), seq 131072, pretrain bf16
# layout: tp=8 pp=1 dp=2 cp=4 zero=1 sp=on mbs=2 ga=8 recompute=none; global batch 32 sequences
# cannot express: llama-2-7b has no torchtitan registry entry: a config_registry function in the style of llama3's, with this model's shape, builds it; pass it as MODULE/CONFIG
# cannot express: ZeRO-1: torchtitan has none; FSDP2 with reshard never (ZeRO-2: gradients sharded too)
# train steps: torchtitan's default --training.steps (give --token-budget and the export counts them)
# 8 nodes: run_train.sh starts one; on each node run torchrun --nnodes 8 --nproc_per_node 8 --rdzv_backend c10d --rdzv_endpoint $HEAD_NODE:29500 -m torchtitan.train --module $MODULE --config $CONFIG with these flags (torchtitan's multinode_trainer.slurm)
NGPU=8 MODULE=$MODULE CONFIG=$CONFIG ./run_train.sh \
  --parallelism.data_parallel_replicate_degree 1 \
  --parallelism.data_parallel_shard_degree 2 \
  --parallelism.fsdp_reshard_after_forward never \
  --parallelism.tensor_parallel_degree 8 \
  --parallelism.enable_sequence_parallel \
  --compile.enable \
  --compile.components model,loss \
  --compile.enable_async_tensor_parallel \
  --parallelism.pipeline_parallel_degree 1 \
  --parallelism.context_parallel_degree 4 \
  --parallelism.expert_parallel_degree 1 \
  --training.local_batch_size 2 \
  --training.global_batch_size 32 \
  --training.seq_len 131072 \
  --training.mixed_precision_param bfloat16 \
  activation-checkpoint:none
