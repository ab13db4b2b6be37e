// The assistant's text, split into content and tool calls as it streams: text deltas in, OpenAI
// chunk deltas out (`{content}` or `{tool_calls: [...]}`), in order. Like stop strings, text
// that may be the beginning of a call is held back until it is known, so the client never sees
// call syntax as content. A call is announced only once its block is complete and well formed
// (a block that turns out malformed, or is cut off by the end of the generation, is content,
// tags and all): a client never receives a call that is later taken back, at the price of
// getting each call's arguments in one piece rather than token by token.
//
// Whitespace right before a call is no content, nor is whitespace after a call unless more
// content follows it (then it still separates the two pieces of content). parseToolCalls() is this
// same machine fed the whole text at once, so a stream, however it is split, assembles to the
// same content and calls as the whole answer.
import crypto from 'node:crypto';
import { type ParsedToolCall, type ToolSyntax } from './tool-formats.js';

/** One entry of `delta.tool_calls` in an OpenAI chat completion chunk. */
export interface ToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function: { name?: string; arguments: string };
}

/** The `delta` of one OpenAI chat completion chunk. */
export type ChatDelta = { content: string } | { tool_calls: [ToolCallDelta] };

/** A fresh call id, in OpenAI's form. */
export function toolCallId(): string {
  return `call_${crypto.randomBytes(12).toString('hex')}`;
}

const isSpace = (ch: string) => ch === ' ' || ch === '\t' || ch === '\n' || ch === '\r';

/** The index where the whitespace that ends text[0, end) begins. */
function backOverSpace(text: string, end: number): number {
  while (end > 0 && isSpace(text[end - 1]!)) end--;
  return end;
}

export class ToolCallStream {
  private held = '';
  /** Just after a call: whitespace waits to see whether more content follows it. */
  private afterCall = false;
  private contentSent = false;
  private calls = 0;

  constructor(
    private readonly syntax: ToolSyntax,
    private readonly newId: () => string = toolCallId,
  ) {}

  /** Adds generated text; returns the deltas that may be sent now. */
  push(text: string): ChatDelta[] {
    this.held += text;
    return this.drain(false);
  }

  /** The generation has ended: everything still held is settled. */
  finish(): ChatDelta[] {
    return this.drain(true);
  }

  private drain(final: boolean): ChatDelta[] {
    const out: ChatDelta[] = [];
    const content = (text: string) => {
      if (text === '') return;
      out.push({ content: text });
      this.contentSent = true;
    };
    for (;;) {
      if (this.afterCall) {
        let i = 0;
        while (i < this.held.length && isSpace(this.held[i]!)) i++;
        if (i === this.held.length) {
          if (final) this.held = '';
          break;
        }
        // Whitespace between content and content stays; at the edges of the content it goes.
        if (!this.contentSent) this.held = this.held.slice(i);
        this.afterCall = false;
      }
      const start = this.syntax.findStart(this.held, 0);
      if (start === -1) {
        const keep = final ? this.held.length : backOverSpace(this.held, this.syntax.partialStart(this.held));
        content(this.held.slice(0, keep));
        this.held = this.held.slice(keep);
        break;
      }
      const before = backOverSpace(this.held, start);
      const block = this.syntax.readBlock(this.held, start);
      if (block.status === 'done') {
        content(this.held.slice(0, before));
        for (const call of block.calls) out.push(...this.announce(call));
        this.held = this.held.slice(block.end);
        this.afterCall = true;
        continue;
      }
      if (block.status === 'more' && !final) {
        content(this.held.slice(0, before));
        this.held = this.held.slice(before);
        break;
      }
      // No call begins here after all (or it never ended): its first character is content, and
      // the search goes on after it.
      content(this.held.slice(0, start + 1));
      this.held = this.held.slice(start + 1);
    }
    return out;
  }

  /** The two deltas of one call: its id and name, then its arguments. */
  private announce(call: ParsedToolCall): ChatDelta[] {
    const index = this.calls++;
    return [
      { tool_calls: [{ index, id: this.newId(), type: 'function', function: { name: call.name, arguments: '' } }] },
      { tool_calls: [{ index, function: { arguments: call.arguments } }] },
    ];
  }
}

/** The whole assistant text as content and calls; content is null when it is empty and there are calls. */
export function parseToolCalls(syntax: ToolSyntax, text: string): { content: string | null; calls: ParsedToolCall[] } {
  const stream = new ToolCallStream(syntax, () => '');
  let content = '';
  const calls: Array<{ name: string; arguments: string }> = [];
  for (const delta of [...stream.push(text), ...stream.finish()]) {
    if ('content' in delta) content += delta.content;
    else {
      const { index, function: fn } = delta.tool_calls[0];
      if (fn.name !== undefined) calls[index] = { name: fn.name, arguments: '' };
      calls[index]!.arguments += fn.arguments;
    }
  }
  return { content: content === '' && calls.length > 0 ? null : content, calls };
}
