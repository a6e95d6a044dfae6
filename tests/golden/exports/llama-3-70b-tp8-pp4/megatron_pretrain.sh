# shardwise export: llama-3-70b on 32 x h100-sxm (4 nodes of 8), seq 8192, pretrain bf16
# layout: tp=8 pp=4 dp=1 zero=0 sp=on mbs=4 ga=128 recompute=full; global batch 512 sequences
# set TOKENIZER (a Hugging Face tokenizer name or path) and DATA_PREFIX (Megatron .bin/.idx prefix)
# train steps: a placeholder (give --token-budget and the export counts them)
# learning rate: --lr 1.5e-4 --min-lr 1.5e-5 --lr-decay-style cosine, placeholders that shardwise does not size: set your own
export CUDA_DEVICE_MAX_CONNECTIONS=1
# 4 nodes: run this on every node, with HEAD_NODE the first node's address (torchrun's c10d rendezvous gives each node its rank)
torchrun --nnodes 4 --nproc-per-node 8 --rdzv-backend c10d --rdzv-endpoint $HEAD_NODE:29500 pretrain_gpt.py \
  --num-layers 80 \
  --hidden-size 8192 \
  --ffn-hidden-size 28672 \
  --num-attention-heads 64 \
  --group-query-attention \
  --num-query-groups 8 \
  --seq-length 8192 \
  --max-position-embeddings 8192 \
  --position-embedding-type rope \
  --rotary-base 500000 \
  --normalization RMSNorm \
  --swiglu \
  --disable-bias-linear \
  --untie-embeddings-and-output-weights \
  --attention-dropout 0.0 \
  --hidden-dropout 0.0 \
  --tensor-model-parallel-size 8 \
  --sequence-parallel \
  --tp-comm-overlap \
  --pipeline-model-parallel-size 4 \
  --context-parallel-size 1 \
  --expert-model-parallel-size 1 \
  --micro-batch-size 4 \
  --global-batch-size 512 \
  --bf16 \
  --grad-reduce-in-bf16 \
  --recompute-granularity full \
  --recompute-method uniform \
  --recompute-num-layers 1 \
  --padded-vocab-size 128256 \
  --train-iters 100000 \
  --lr 1.5e-4 \
  --min-lr 1.5e-5 \
  --lr-decay-style cosine \
  --tokenizer-type HuggingFaceTokenizer \
  --tokenizer-model "$TOKENIZER" \
  --data-path "$DATA_PREFIX"
