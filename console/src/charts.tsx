// Time charts drawn with uPlot. This module (and uPlot with its stylesheet) is loaded only when a
// page shows charts (the Metrics page imports it on demand), so the first visit stays small.
// Colours come from the page's CSS variables and a palette per theme; a change of the system's
// colour scheme redraws the charts in the other theme.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import './charts.css';

export interface ChartSeries {
  label: string;
  /** Index into the palette; the same index gets the same colour in every chart. */
  color: number;
  /** A dashed line (p99 beside a solid p50). */
  dashed?: boolean;
}

export interface TimeChartProps {
  /** The id of the caption element, which names the chart. */
  titleId: string;
  /** The y axis's label, with its unit: "requests per minute". */
  yLabel: string;
  /** How a value is written in the legend (with its unit; the axis has plain numbers). */
  format: (v: number) => string;
  series: ChartSeries[];
  /** [unix seconds[], ...one array per series, null for no figure]. */
  data: [number[], ...Array<Array<number | null>>];
  /** A floor for the top of the y axis, so that a flat zero line sits at the bottom. */
  minTop?: number;
  /** Fixed top of the y axis (percentages: 100). */
  maxTop?: number;
}

// Colour-blind-friendly (Okabe-Ito), darker for light backgrounds and lighter for dark ones.
const PALETTE = {
  light: ['#0060b0', '#c25400', '#00806a', '#b0307a', '#6a5acd', '#8a6d00', '#3b3b3b'],
  dark: ['#5aa9f0', '#f39c4a', '#3cc7a8', '#ee7ab8', '#a99bff', '#e2c340', '#d0d0d0'],
};

const dark = () => matchMedia('(prefers-color-scheme: dark)').matches;

function cssVar(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

/** The colour of series `i` in the current theme (the legend outside the chart uses it too). */
export function seriesColor(i: number): string {
  const p = dark() ? PALETTE.dark : PALETTE.light;
  return p[i % p.length]!;
}

/** The shortest time span the x axis shows, in seconds. */
const MIN_SPAN_S = 60;

const last = (column: ArrayLike<number | null | undefined> | undefined) => (column && column.length > 0 ? column[column.length - 1] : null);
const time = (v: number | null | undefined) => (v === null || v === undefined ? '–' : new Date(v * 1000).toLocaleTimeString());

const FONT = '12px system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif';
const LABEL_FONT = '600 12px system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif';

function options(p: TimeChartProps, width: number): uPlot.Options {
  const text = cssVar('--muted') || '#5b6470';
  const grid = cssVar('--border') || '#d5dae1';
  const narrow = width < 500;
  return {
    width,
    height: narrow ? 190 : 220,
    // The page's own legend-free layout: uPlot's legend shows the values under the cursor.
    legend: { show: true, live: true },
    cursor: { drag: { x: false, y: false }, points: { size: 7 } },
    scales: {
      // At least the last 2 minutes, so that the first few points do not stretch the axis to years.
      x: {
        time: true,
        // From the data itself: uPlot widens a single point's range to a day before asking.
        range: (u) => {
          const xs = u.data[0];
          const end = xs.length > 0 ? xs[xs.length - 1]! : Date.now() / 1000;
          const start = xs.length > 0 ? xs[0]! : end;
          return [Math.min(start, end - MIN_SPAN_S), end];
        },
      },
      y: {
        range: (_u, _min, max) => {
          if (p.maxTop !== undefined) return [0, p.maxTop];
          const top = Math.max(max ?? 0, p.minTop ?? 1);
          return [0, top * 1.15];
        },
      },
    },
    axes: [
      {
        stroke: text,
        font: FONT,
        labelFont: LABEL_FONT,
        label: 'Time (local)',
        labelSize: 22,
        grid: { stroke: grid, width: 1 },
        ticks: { stroke: grid, width: 1 },
        space: narrow ? 70 : 90,
      },
      {
        stroke: text,
        font: FONT,
        labelFont: LABEL_FONT,
        label: p.yLabel,
        labelSize: 22,
        size: narrow ? 46 : 56,
        grid: { stroke: grid, width: 1 },
        ticks: { stroke: grid, width: 1 },
        values: (_u, splits) => splits.map((v) => String(Number(v.toPrecision(4)))),
      },
    ],
    series: [
      // Away from the chart, the legend shows the latest point; under the cursor, that point's.
      { value: (u, v, _s, idx) => time(idx === null ? last(u.data[0]) : v) },
      ...p.series.map(
        (s): uPlot.Series => ({
          label: s.label,
          stroke: seriesColor(s.color),
          width: 2,
          ...(s.dashed ? { dash: [6, 4] } : {}),
          points: { show: true, size: 5, fill: seriesColor(s.color) },
          spanGaps: false,
          value: (u, v, sidx, idx) => {
            const shown = idx === null ? last(u.data[sidx]) : v;
            return shown === null || shown === undefined ? '–' : p.format(shown);
          },
        }),
      ),
    ],
  };
}

/** One live time chart; `data` may change on every render (setData), `series` rebuild it. */
export function TimeChart(props: TimeChartProps) {
  const holder = useRef<HTMLDivElement>(null);
  const chart = useRef<uPlot | null>(null);
  const latest = useRef(props);
  latest.current = props;
  const shape = `${props.yLabel}|${props.series.map((s) => `${s.label}:${s.color}:${s.dashed ? 1 : 0}`).join(',')}`;

  useEffect(() => {
    const el = holder.current;
    if (!el) return;
    const build = () => {
      chart.current?.destroy();
      const width = Math.max(200, Math.floor(el.clientWidth));
      chart.current = new uPlot(options(latest.current, width), latest.current.data as uPlot.AlignedData, el);
    };
    build();
    // Another width (a rotated phone, a resized window): the same chart, resized.
    let lastWidth = el.clientWidth;
    const resize = new ResizeObserver(() => {
      const w = Math.floor(el.clientWidth);
      if (w === lastWidth || !chart.current) return;
      lastWidth = w;
      if ((w < 500) !== (chart.current.width < 500)) build();
      else chart.current.setSize({ width: Math.max(200, w), height: chart.current.height });
    });
    resize.observe(el);
    // The system's theme changes: redraw in the other colours.
    const scheme = matchMedia('(prefers-color-scheme: dark)');
    scheme.addEventListener('change', build);
    return () => {
      resize.disconnect();
      scheme.removeEventListener('change', build);
      chart.current?.destroy();
      chart.current = null;
    };
  }, [shape]);

  useEffect(() => {
    chart.current?.setData(props.data as uPlot.AlignedData);
  }, [props.data]);

  return <div class="time-chart" ref={holder} aria-hidden="true" />;
}
