# shardwise export: llama-3-70b on 32 x h100-sxm (4 nodes of 8), seq 8192, pretrain bf16
# layout: tp=8 pp=4 dp=1 zero=0 sp=on mbs=4 ga=128 recompute=full; global batch 512 sequences
# cannot express: Megatron sequence parallelism is not in DeepSpeed's JSON (Megatron-DeepSpeed: --sequence-parallel)
# TP 8 x PP 4 x DP 1 = 32 GPUs: DeepSpeed counts train_batch_size over the 1 DP ranks
# train.py is your script; the parallel-size flags are Megatron-DeepSpeed's (pretrain_gpt.py), elsewhere TP and PP are built in the model code
# train steps: the script's own (give --token-budget and the export counts them)
# 4 nodes: list them in a hostfile, one 'HOST slots=8' line each; the launcher starts every node from this one (pdsh/ssh)
deepspeed --hostfile hostfile --num_nodes 4 --num_gpus 8 train.py --deepspeed_config ds_config.json --tensor-model-parallel-size 8 --pipeline-model-parallel-size 4
