// llama.cpp's clean_spaces pass of llama_detokenize for byte-level BPE vocabularies (Hugging
// Face's clean_up_tokenization_spaces), as a streaming transducer so the stream decoder can apply
// it chunk by chunk with the same result as on the whole text. Three passes, in order:
//   1. " ?" " !" " ." " ," lose the space;
//   2. " ' " becomes "'";
//   3. " 's" " 'm" " 're" " 've" lose the space (" 't" " 'd" " 'll" keep it).
// Each pass holds back a space (and what follows it) only until the next character decides it.

interface Pass {
  push(ch: string, emit: (s: string) => void): void;
  end(emit: (s: string) => void): void;
  /** Nothing held back. */
  idle(): boolean;
}

/** Pass 1: a space before ? ! . , is removed. */
function punctuationPass(): Pass {
  let held = false;
  return {
    push(ch, emit) {
      if (held) {
        held = false;
        if (ch === '?' || ch === '!' || ch === '.' || ch === ',') return emit(ch);
        emit(' ');
      }
      if (ch === ' ') held = true;
      else emit(ch);
    },
    end(emit) {
      if (held) emit(' ');
      held = false;
    },
    idle: () => !held,
  };
}

/** Pass 2: " ' " collapses to "'" (the space after the apostrophe is consumed). */
function quotePass(): Pass {
  let state: '' | ' ' | " '" = '';
  const pass: Pass = {
    push(ch, emit) {
      if (state === '') {
        if (ch === ' ') state = ' ';
        else emit(ch);
      } else if (state === ' ') {
        if (ch === "'") state = " '";
        else if (ch === ' ') emit(' ');
        else {
          state = '';
          emit(' ' + ch);
        }
      } else {
        state = '';
        if (ch === ' ') emit("'");
        else {
          emit(" '");
          pass.push(ch, emit);
        }
      }
    },
    end(emit) {
      if (state !== '') emit(state);
      state = '';
    },
    idle: () => state === '',
  };
  return pass;
}

/** Pass 3: the space before 's 'm 're 've is removed. */
function contractionPass(): Pass {
  let held = ''; // '', ' ', " '", " 'r" or " 'v"
  const pass: Pass = {
    push(ch, emit) {
      if (held === '') {
        if (ch === ' ') held = ' ';
        else emit(ch);
      } else if (held === ' ') {
        if (ch === "'") held = " '";
        else if (ch !== ' ') {
          held = '';
          emit(' ' + ch);
        } else emit(' ');
      } else if (held === " '") {
        held = '';
        if (ch === 's' || ch === 'm') emit("'" + ch);
        else if (ch === 'r' || ch === 'v') held = " '" + ch;
        else {
          emit(" '");
          pass.push(ch, emit);
        }
      } else {
        const pending = held;
        held = '';
        if (ch === 'e') emit(pending.slice(1) + ch);
        else {
          emit(pending);
          pass.push(ch, emit);
        }
      }
    },
    end(emit) {
      if (held !== '') emit(held);
      held = '';
    },
    idle: () => held === '',
  };
  return pass;
}

export class SpaceCleaner {
  private readonly passes = [punctuationPass(), quotePass(), contractionPass()];

  /** Cleaned text that no later input can change. */
  push(text: string): string {
    // Every rule starts at a space: text without one passes straight through an idle cleaner.
    if (!text.includes(' ') && this.passes.every((p) => p.idle())) return text;
    return this.run(text, false);
  }

  /** Whatever was held back, at the end of the text. */
  end(): string {
    return this.run('', true);
  }

  private run(text: string, final: boolean): string {
    let input = text;
    for (const pass of this.passes) {
      let out = '';
      const emit = (s: string) => {
        out += s;
      };
      for (const ch of input) pass.push(ch, emit);
      if (final) pass.end(emit);
      input = out;
    }
    return input;
  }
}

/** Rules only fire on a space before ? ! . , or an apostrophe; most text has none. */
const TRIGGER = / [?!.,']/;

export function cleanSpaces(text: string): string {
  if (!TRIGGER.test(text)) return text;
  const c = new SpaceCleaner();
  return c.push(text) + c.end();
}
