// What chat templates expect from their renderer beyond @huggingface/jinja's own globals, in one
// place (the Jinja engine itself already has raise_exception, namespace, loop controls and the
// filters these templates use):
//
// - strftime_now(format): Llama 3.2 / 3.3 ("%d %b %Y"), Mistral Small 3 and gpt-oss ("%Y-%m-%d")
//   write today's date. @huggingface/jinja's version names months in the process's locale; this
//   one writes C-locale English, as Python's strftime and llama.cpp do, from a clock that tests
//   can fix.
// - enable_thinking: true, as llama.cpp's server passes by default: Qwen 3 reads it, and
//   llama.cpp's copy of the DeepSeek-R1 Qwen distill template closes the <think> block unless
//   it is set.

const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];

const pad = (n: number, width = 2, fill = '0') => String(n).padStart(width, fill);

/** Python's time.strftime in the C locale for the common directives; others are kept as written. */
export function strftime(date: Date, format: string): string {
  return format.replace(/%([aAbBdeHIjmMpSyYZ%])/g, (_, d: string) => {
    switch (d) {
      case 'a':
        return DAYS[date.getDay()]!.slice(0, 3);
      case 'A':
        return DAYS[date.getDay()]!;
      case 'b':
        return MONTHS[date.getMonth()]!.slice(0, 3);
      case 'B':
        return MONTHS[date.getMonth()]!;
      case 'd':
        return pad(date.getDate());
      case 'e':
        return pad(date.getDate(), 2, ' ');
      case 'H':
        return pad(date.getHours());
      case 'I':
        return pad(date.getHours() % 12 || 12);
      case 'j': {
        const start = new Date(date.getFullYear(), 0, 1);
        return pad(Math.round((new Date(date.getFullYear(), date.getMonth(), date.getDate()).getTime() - start.getTime()) / 86_400_000) + 1, 3);
      }
      case 'm':
        return pad(date.getMonth() + 1);
      case 'M':
        return pad(date.getMinutes());
      case 'p':
        return date.getHours() < 12 ? 'AM' : 'PM';
      case 'S':
        return pad(date.getSeconds());
      case 'y':
        return pad(date.getFullYear() % 100);
      case 'Y':
        return String(date.getFullYear());
      case 'Z':
        return '';
      default:
        return '%';
    }
  });
}

/**
 * Put before every template's source: @huggingface/jinja declares its own strftime_now before the
 * context, and a context entry of that name is refused, so ours comes in under another name and a
 * `set` (which outputs nothing and trims nothing) replaces the global.
 */
export const TEMPLATE_PRELUDE = '{% set strftime_now = __strftime_now %}';

/** The context entries every chat template is rendered with; `now` is the clock (local time). */
export function templateGlobals(now: () => Date = () => new Date()): Record<string, unknown> {
  return {
    __strftime_now: (format: unknown) => strftime(now(), String(format)),
    enable_thinking: true,
  };
}
