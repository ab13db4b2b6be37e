// An engine's description (engineInfo(), local or GET /api/v1/engine) as people read it: SIMD,
// threads, and CUDA with one line per device. `platform engine` and `platform status` share it.
import type { EngineInfo } from '../native/surface.js';
import { bytes, formatFields, formatTable } from './table.js';

function cudaSummary(cuda: EngineInfo['cuda']): string {
  if (!cuda.built) return 'not built (npm run build:cuda builds the addon with CUDA)';
  if (cuda.devices.length === 0) return `built, no device${cuda.error ? `: ${cuda.error}` : ''}`;
  return `built, ${cuda.devices.length} device${cuda.devices.length === 1 ? '' : 's'}`;
}

/** The engine's fields, to print alone or after other fields. */
export function engineFields(info: EngineInfo): Array<[string, string]> {
  const simd = info.simd;
  const fields: Array<[string, string]> = [
    ['engine version', info.version],
    ['simd', `${simd.active}${simd.active === simd.detected ? '' : ` (detected ${simd.detected})`}; available: ${simd.available.join(', ')}`],
  ];
  if (simd.warning) fields.push(['simd warning', simd.warning]);
  fields.push(['threads', String(info.threads)], ['cuda', cudaSummary(info.cuda)]);
  return fields;
}

/** The CUDA devices as a table, or nothing when there are none. */
export function deviceTable(info: EngineInfo): string {
  if (info.cuda.devices.length === 0) return '';
  const rows = info.cuda.devices.map((d, i) => [String(i), d.name, bytes(d.totalMemory), d.computeCapability]);
  return '\n' + formatTable(['DEVICE', 'NAME', 'MEMORY', 'COMPUTE CAPABILITY'], rows);
}

export function formatEngine(info: EngineInfo, before: Array<[string, string]> = []): string {
  return formatFields([...before, ...engineFields(info)]) + deviceTable(info);
}
