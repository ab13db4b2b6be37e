// Embeddings from BERT-family GGUF models (bert, nomic-bert). See README.md.
export { allowsShorterDimensions, Embedder, EMBEDDING_ARCHITECTURES, loadEmbedder, truncateEmbedding, type EmbedderInfo, type LoadEmbedderOptions } from './embedder.js';
