# shardwise export: llama-2-7b on 64 x h100-sxm (8 nodes of 8), seq 131072, pretrain bf16
# layout: tp=8 pp=1 dp=2 cp=4 zero=1 sp=on mbs=2 ga=8 recompute=none; global batch 32 sequences
# set TOKENIZER (a Hugging Face tokenizer name or path) and DATA_PREFIX (Megatron .bin/.idx prefix)
# train steps: a placeholder (give --token-budget and the export counts them)
# learning rate: --lr 1.5e-4 --min-lr 1.5e-5 --lr-decay-style cosine, placeholders that shardwise does not size: set your own
export CUDA_DEVICE_MAX_CONNECTIONS=1
# 8 nodes: run this on every node, with HEAD_NODE the first node's address (torchrun's c10d rendezvous gives each node its rank)
torchrun --nnodes 8 --nproc-per-node 8 --rdzv-backend c10d --rdzv-endpoint $HEAD_NODE:29500 pretrain_gpt.py \
  --num-layers 32 \
  --hidden-size 4096 \
  --ffn-hidden-size 11008 \
  --num-attention-heads 32 \
  --seq-length 131072 \
  --max-position-embeddings 131072 \
  --position-embedding-type rope \
  --normalization RMSNorm \
  --swiglu \
  --disable-bias-linear \
  --untie-embeddings-and-output-weights \
  --attention-dropout 0.0 \
  --hidden-dropout 0.0 \
  --tensor-model-parallel-size 8 \
  --sequence-parallel \
  --tp-comm-overlap \
  --pipeline-model-parallel-size 1 \
  --context-parallel-size 4 \
  --expert-model-parallel-size 1 \
  --use-distributed-optimizer \
  --overlap-grad-reduce \
  --overlap-param-gather \
  --micro-batch-size 2 \
  --global-batch-size 32 \
  --bf16 \
  --grad-reduce-in-bf16 \
  --padded-vocab-size 32000 \
  --train-iters 100000 \
  --lr 1.5e-4 \
  --min-lr 1.5e-5 \
  --lr-decay-style cosine \
  --tokenizer-type HuggingFaceTokenizer \
  --tokenizer-model "$TOKENIZER" \
  --data-path "$DATA_PREFIX"
