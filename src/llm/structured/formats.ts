// The string formats a schema may name, each as an anchored regular expression whose every match
// passes ajv-formats' full check (a subset where the full rule is irregular or unbounded:
// no leap seconds, at most 9 fraction digits, "+hh:mm" zones only, no "urn:uuid:" prefix).

const DAY31 = '(?:0[1-9]|[12]\\d|3[01])';
const DAY30 = '(?:0[1-9]|[12]\\d|30)';
const DAY28 = '(?:0[1-9]|1\\d|2[0-8])';
// Years divisible by 4, except centuries not divisible by 400 (00 itself is 0000, divisible).
const LEAP_YEAR = '(?:\\d\\d(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)';
const DATE =
  `(?:\\d{4}-(?:(?:0[13578]|1[02])-${DAY31}|(?:0[469]|11)-${DAY30}|02-${DAY28})` + `|${LEAP_YEAR}-02-29)`;
const TIME = '(?:[01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d(?:\\.\\d{1,9})?(?:[Zz]|[+-](?:[01]\\d|2[0-3]):[0-5]\\d)';
const OCTET = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
const HEX = '[0-9a-fA-F]';

export const FORMAT_PATTERNS: Readonly<Record<string, string>> = {
  date: `^${DATE}$`,
  time: `^${TIME}$`,
  'date-time': `^${DATE}[Tt]${TIME}$`,
  uuid: `^${HEX}{8}-${HEX}{4}-${HEX}{4}-${HEX}{4}-${HEX}{12}$`,
  ipv4: `^${OCTET}(?:\\.${OCTET}){3}$`,
};
