# shardwise export: llama-2-7b on 64 x h100-sxm (8 nodes of 8), seq 131072, pretrain bf16
# layout: tp=8 pp=1 dp=2 cp=4 zero=1 sp=on mbs=2 ga=8 recompute=none; global batch 32 sequences
# cannot express: cp=4: ring-attention context parallelism is not a DeepSpeed feature; the nearest is Ulysses (sequence_parallel_size 4, the attention wrapped by DeepSpeed's UlyssesSPAttentionHF or Accelerate's sp_backend deepspeed), which splits heads with all-to-alls where the estimate times a ring
# cannot express: Megatron sequence parallelism is not in DeepSpeed's JSON (Megatron-DeepSpeed: --sequence-parallel)
# TP 8 x PP 1 x CP 4 (Ulysses sequence parallelism, the nearest) x DP 2 = 64 GPUs: DeepSpeed counts train_batch_size over the 2 DP ranks
# train.py is your script; the parallel-size flags are Megatron-DeepSpeed's (pretrain_gpt.py), elsewhere TP and PP are built in the model code
# train steps: the script's own (give --token-budget and the export counts them)
# 8 nodes: list them in a hostfile, one 'HOST slots=8' line each; the launcher starts every node from this one (pdsh/ssh)
deepspeed --hostfile hostfile --num_nodes 8 --num_gpus 8 train.py --deepspeed_config ds_config.json --tensor-model-parallel-size 8 --pipeline-model-parallel-size 1 --ds-sequence-parallel-size 4
