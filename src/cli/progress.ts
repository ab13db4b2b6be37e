// Progress of a long operation: a redrawn bar on a terminal, plain lines otherwise (CI logs,
// pipes), so that both a person and a log reader can follow it.

export interface Progress {
  update(fraction: number, label: string): void;
  done(label: string): void;
}

export function createProgress(stream: NodeJS.WriteStream = process.stderr, width = 30): Progress {
  let lastLabel = '';
  if (!stream.isTTY) {
    return {
      update(_fraction, label) {
        if (label !== lastLabel) stream.write(`${label}\n`);
        lastLabel = label;
      },
      done(label) {
        if (label !== lastLabel) stream.write(`${label}\n`);
      },
    };
  }
  const draw = (fraction: number, label: string) => {
    const filled = Math.round(Math.max(0, Math.min(1, fraction)) * width);
    stream.write(`\r[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${label}\x1b[K`);
  };
  return {
    update: draw,
    done(label) {
      draw(1, label);
      stream.write('\n');
    },
  };
}
