// Byte-level BPE pre-tokenizers by `tokenizer.ggml.pre` name: the regexes llama.cpp splits text
// with before merging (llama-vocab.cpp, llm_tokenizer_bpe), and the flags the same name sets
// (clean_spaces for detokenizing, ignore_merges, add_bos). The regex strings are llama.cpp's own,
// byte for byte (including the literal CR / LF characters some of them hold): regex-split.ts
// recognises three of them and runs llama.cpp's hand-written splitters for those, exactly as
// unicode.cpp does, and runs the others the way llama.cpp hands them to std::regex.

export const GPT2_REGEX = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
export const LLAMA3_REGEX =
  "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
export const QWEN2_REGEX =
  "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

export const QWEN35_REGEX =
  "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

export interface PreTokenizer {
  /** The family, as llama.cpp's LLAMA_VOCAB_PRE_TYPE_* names it (lower case). */
  type:
    | 'default' | 'gpt2' | 'llama3' | 'qwen2' | 'qwen35' | 'starcoder' | 'dbrx' | 'falcon' | 'gpt4o' | 'tekken'
    | 'deepseek-llm' | 'deepseek3-llm' | 'deepseek-coder' | 'seed-coder';
  regexes: readonly string[];
  /** Detokenizing removes spaces before punctuation and some contractions. */
  cleanSpaces: boolean;
  /** A word that is itself a vocabulary entry is taken whole, without merging. */
  ignoreMerges: boolean;
  /** The default for add_bos_token when the file does not say. */
  addBos: boolean;
}

const DEFAULT: PreTokenizer = {
  type: 'default',
  regexes: ['[\\p{P}\\$\\+<=>\\^~\\|]+', GPT2_REGEX, '\\p{N}+', '[0-9][0-9][0-9]'],
  cleanSpaces: true,
  ignoreMerges: false,
  addBos: false,
};
const GPT2 = { type: 'gpt2', regexes: [GPT2_REGEX], ignoreMerges: false, addBos: false } as const;
const LLAMA3 = { type: 'llama3', regexes: [LLAMA3_REGEX], cleanSpaces: true, ignoreMerges: true, addBos: true } as const;
const QWEN2 = { type: 'qwen2', regexes: [QWEN2_REGEX], ignoreMerges: false, addBos: false } as const;
const STARCODER = { type: 'starcoder', regexes: ['\\p{N}', GPT2_REGEX], ignoreMerges: false, addBos: false } as const;
const DBRX = { type: 'dbrx', regexes: [LLAMA3_REGEX], cleanSpaces: true, ignoreMerges: false, addBos: false } as const;

const GPT4O = {
  type: 'gpt4o',
  // o200k's regex with llama.cpp's rewrite of \p{Lu}... as lookaheads for std::regex
  regexes: [
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  ],
  cleanSpaces: false,
  ignoreMerges: false,
  addBos: false,
} as const;
const TEKKEN = {
  type: 'tekken',
  regexes: [
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  ],
  cleanSpaces: false,
  ignoreMerges: true,
  addBos: true,
} as const;
const DEEPSEEK_LLM = {
  type: 'deepseek-llm',
  regexes: [
    "[\r\n]",
    "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+",
    "\\s?[!-/:-~！-／：-～‘-‟　-。]+",
    "\\s+$",
    "[一-龥ࠀ-一가-퟿]+",
    "\\p{N}+",
  ],
  cleanSpaces: false,
  ignoreMerges: false,
  addBos: false,
} as const;
const DEEPSEEK3_LLM = {
  type: 'deepseek3-llm',
  regexes: [
    "\\p{N}{1,3}",
    "[一-龥぀-ゟ゠-ヿ]+",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
  ],
  cleanSpaces: false,
  ignoreMerges: false,
  addBos: false,
} as const;
const DEEPSEEK_CODER = {
  type: 'deepseek-coder',
  regexes: [
    "[\r\n]",
    "\\s?\\p{L}+",
    "\\s?\\p{P}+",
    "[一-龥ࠀ-一가-퟿]+",
    "\\p{N}",
  ],
  cleanSpaces: false,
  ignoreMerges: false,
  addBos: false,
} as const;
const FALCON = {
  type: 'falcon',
  regexes: [
    "[\\p{P}\\$\\+<=>\\^~\\|`]+",
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
    "[0-9][0-9][0-9]",
  ],
  cleanSpaces: true,
  ignoreMerges: false,
  addBos: false,
} as const;
const SEED_CODER = {
  type: 'seed-coder',
  regexes: [
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  ],
  cleanSpaces: false,
  ignoreMerges: false,
  addBos: false,
} as const;

const TABLE = new Map<string, PreTokenizer>();
const add = (names: string[], spec: PreTokenizer) => names.forEach((n) => TABLE.set(n, spec));

add(['default'], DEFAULT);
add(['llama3', 'llama-v3', 'llama-bpe', 'falcon3', 'falcon-h1', 'pixtral', 'midm-2.0', 'lfm2', 'jina-v5-nano'], LLAMA3);
add(
  ['gpt-2', 'phi-2', 'jina-es', 'jina-de', 'gigachat', 'jina-v2-es', 'jina-v2-de', 'a.x-4.0', 'mellum', 'modern-bert', 'exaone4', 'mpt', 'olmo', 'jais'],
  { ...GPT2, cleanSpaces: true },
);
add(['trillion', 'granite-docling'], { ...GPT2, cleanSpaces: false });
add(['qwen2', 'deepseek-r1-qwen', 'kormo', 'f2llmv2', 'hunyuan', 'solar-open', 'grok-2'], { ...QWEN2, cleanSpaces: false });
add(['megrez', 'stablelm2'], { ...QWEN2, cleanSpaces: true });
add(['qwen35'], { type: 'qwen35', regexes: [QWEN35_REGEX], cleanSpaces: false, ignoreMerges: false, addBos: false });
add(['starcoder', 'refact', 'codeshell', 'exaone', 'minerva-7b', 'mellum2'], { ...STARCODER, cleanSpaces: true });
add(['command-r', 'smollm'], { ...STARCODER, cleanSpaces: false });
add(['dbrx', 'smaug-bpe'], DBRX);
add(['gpt-4o', 'llama4', 'kanana2', 'talkie', 'minimax-m2'], GPT4O);
add(['tekken'], TEKKEN);
add(['deepseek-llm'], DEEPSEEK_LLM);
add(['deepseek-v3', 'hunyuan-dense', 'joyai-llm', 'hy_v4'], DEEPSEEK3_LLM);
add(['deepseek-coder'], DEEPSEEK_CODER);
add(['falcon'], FALCON);
add(['seed-coder'], SEED_CODER);

/** The pre-tokenizer for a `tokenizer.ggml.pre` value (absent means llama.cpp's default). */
export function preTokenizer(name: string | undefined): PreTokenizer | undefined {
  return name === undefined || name === '' ? DEFAULT : TABLE.get(name);
}

export function supportedPreTokenizers(): string[] {
  return [...TABLE.keys()].sort();
}
