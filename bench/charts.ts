/**
 * The charts of a run, as vega-lite specs rendered in Node (vega, no browser) to SVG, and to
 * PNG with resvg: throughput vs K, p99 and max latency vs K, the latency histogram of each mode
 * at the largest K, and the WAL size over time.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Resvg } from "@resvg/resvg-js";
import * as vega from "vega";
import { compile, type TopLevelSpec } from "vega-lite";
import type { BenchResult } from "./bench-result.js";
import { machineLine } from "./machine.js";
import { CONVOY_MODES, MODES, type ConvoyMode } from "./modes.js";
import { HISTOGRAM_EDGES_MS } from "./stats.js";

const FONT = "DejaVu Sans, Helvetica, Arial, sans-serif";
// One color per mode, in CONVOY_MODES order; the PostgreSQL modes in greens and brown.
const MODE_COLORS = ["#d62728", "#ff7f0e", "#bcbd22", "#1f77b4", "#9467bd", "#17becf", "#7f7f7f", "#8c564b", "#2ca02c", "#98df8a"];
const modeColor = { field: "mode", type: "nominal", title: "mode", scale: { domain: [...CONVOY_MODES], range: MODE_COLORS } } as const;
const KS_MODES = CONVOY_MODES.filter((m) => MODES[m].clients === "k");

export interface Chart {
  name: string;
  spec: TopLevelSpec;
}

/** The convoy charts' second subtitle line. */
function convoyLine(result: BenchResult): string {
  const { options } = result;
  return `${options.reps} repetition(s) × ${options.seconds} s per run, synchronous=${options.synchronous}`;
}

function titled(text: string, result: BenchResult, detail: string) {
  // Short lines: without a browser, vega over-estimates the width of long text.
  return { text, subtitle: [machineLine(result.machine, result.startedAt.slice(0, 10)), detail], anchor: "start" as const };
}

const CONFIG = { font: FONT, background: "white", view: { stroke: "#ddd" }, title: { subtitleFontSize: 10 } };

/** A chart: the common header (schema, title with the machine line, config) and its own body. */
function chart(name: string, title: string, result: BenchResult, body: Record<string, unknown>, detail = convoyLine(result)): Chart {
  return {
    name,
    spec: { $schema: "https://vega.github.io/schema/vega-lite/v6.json", title: titled(title, result, detail), config: CONFIG, ...body } as TopLevelSpec,
  };
}

/** How a chart or table names an fsync delay. */
export function fsyncLabel(ms: number): string {
  return ms === 0 ? "fsync native" : `fsync +${ms} ms`;
}

/** One panel per fsync delay, side by side, in the order they ran. */
function fsyncColumn(result: BenchResult) {
  return { field: "fsync", type: "nominal", title: null, sort: result.convoy.fsyncDelaysMs.map(fsyncLabel) } as const;
}

function throughputChart(result: BenchResult): Chart | null {
  const rows = result.convoy.summary
    .filter((c) => MODES[c.mode].clients === "k" && c.appendsPerS !== null)
    .map((c) => ({ kind: "k", fsync: fsyncLabel(c.fsyncDelayMs), mode: c.mode, k: c.k, median: c.appendsPerS!.median, min: c.appendsPerS!.min, max: c.appendsPerS!.max }));
  const single = result.convoy.summary
    .filter((c) => MODES[c.mode].clients === "one" && c.appendsPerS !== null)
    .map((c) => ({ kind: "one", fsync: fsyncLabel(c.fsyncDelayMs), mode: c.mode, median: c.appendsPerS!.median, label: `${c.mode} ${c.appendsPerS!.median.toFixed(0)}/s` }));
  if (rows.length === 0 && single.length === 0) return null;
  const x = { field: "k", type: "ordinal", title: "K client processes", axis: { labelAngle: 0 } } as const;
  const only = (kind: string) => [{ filter: `datum.kind === '${kind}'` }];
  return chart("throughput", "Appends per second vs K, per fsync cost (median, bars: range over repetitions)", result, {
    data: { values: [...rows, ...single] },
    facet: { column: fsyncColumn(result) },
    spec: {
      width: 360,
      height: 320,
      layer: [
        { transform: only("k"), mark: { type: "line", point: true }, encoding: { x, y: { field: "median", type: "quantitative", title: "appends/s" }, color: modeColor } },
        { transform: only("k"), mark: "rule", encoding: { x, y: { field: "min", type: "quantitative" }, y2: { field: "max" }, color: modeColor } },
        { transform: only("one"), mark: { type: "rule", strokeDash: [6, 4] }, encoding: { y: { field: "median", type: "quantitative" }, color: modeColor } },
        {
          transform: only("one"),
          mark: { type: "text", align: "right", dy: -6, fontSize: 10 },
          encoding: { y: { field: "median", type: "quantitative" }, x: { value: 355 }, text: { field: "label" }, color: modeColor },
        },
      ],
    },
  });
}

function latencyChart(result: BenchResult): Chart | null {
  const rows = result.convoy.summary
    .filter((c) => MODES[c.mode].clients === "k")
    .flatMap((c) => [
      { mode: c.mode, k: c.k, fsync: fsyncLabel(c.fsyncDelayMs), metric: "p99", ms: Math.max(c.p99?.median ?? 0, 0.01) },
      { mode: c.mode, k: c.k, fsync: fsyncLabel(c.fsyncDelayMs), metric: "max", ms: Math.max(c.max?.median ?? 0, 0.01) },
    ]);
  if (rows.length === 0) return null;
  return chart("latency", "Append latency vs K: p99 and max, per fsync cost (median over repetitions, log scale)", result, {
    data: { values: rows },
    mark: { type: "line", point: true },
    width: 300,
    height: 260,
    encoding: {
      column: { field: "metric", type: "nominal", title: null, sort: ["p99", "max"] },
      row: { ...fsyncColumn(result), header: { labelAngle: 0, labelAlign: "left" } },
      x: { field: "k", type: "ordinal", title: "K client processes", axis: { labelAngle: 0 } },
      y: { field: "ms", type: "quantitative", title: "latency (ms)", scale: { type: "log" } },
      color: modeColor,
    },
  });
}

function histogramChart(result: BenchResult): Chart | null {
  const { histograms, histogramK } = result.convoy;
  const labelOf = (mode: ConvoyMode) => (MODES[mode].clients === "k" ? `${mode} (K=${histogramK})` : `${mode} (1 client)`);
  const order = CONVOY_MODES.map(labelOf);
  const rows = histograms.flatMap(({ mode, counts }) => {
    const total = counts.reduce((a, b) => a + b, 0) || 1;
    const label = labelOf(mode);
    return counts.flatMap((n, i) => (n === 0 ? [] : [{ mode, label, lo: HISTOGRAM_EDGES_MS[i]!, hi: HISTOGRAM_EDGES_MS[i + 1]!, share: (100 * n) / total }]));
  });
  if (rows.length === 0) return null;
  const fsync = fsyncLabel(result.convoy.fsyncDelaysMs[0] ?? 0);
  return chart("histogram", `Append latency distribution per mode at K=${histogramK}, ${fsync} (share of appends per bin)`, result, {
    data: { values: rows },
    mark: { type: "bar", stroke: null },
    width: 520,
    height: 60,
    encoding: {
      row: { field: "label", type: "nominal", title: null, sort: order, header: { labelAngle: 0, labelAlign: "left", labelFontSize: 10 } },
      x: { field: "lo", type: "quantitative", title: "latency (ms, log scale)", scale: { type: "log" } },
      x2: { field: "hi" },
      y: { field: "share", type: "quantitative", title: "%" },
      y2: { datum: 0 },
      color: { ...modeColor, legend: null },
    },
    resolve: { scale: { y: "independent" } },
  });
}

function walChart(result: BenchResult): Chart | null {
  const wal = result.wal;
  if (wal === null) return null;
  const rows = wal.series.flatMap((s) => s.samples.map((p) => ({ via: s.via === "daemon" ? "through the daemon" : "direct mode (no daemon)", t: p.t, mib: p.mib })));
  // The query itself may be CJK, which the PNG's fonts may lack: name it by its kind.
  const bound = wal.walLimitMb === null ? "its default WAL bound" : `a WAL bound of ${wal.walLimitMb} MiB`;
  const detail = `${wal.corpusMessages} messages, synchronous=${result.options.synchronous}, the daemon with ${bound}`;
  return chart("wal", `-wal file size: a flat-out writer and a reader looping ${wal.op}`, result, {
    data: { values: rows },
    mark: { type: "line" },
    width: 520,
    height: 280,
    encoding: {
      x: { field: "t", type: "quantitative", title: "seconds" },
      y: { field: "mib", type: "quantitative", title: "-wal file (MiB)" },
      color: { field: "via", type: "nominal", title: null, scale: { range: ["#d62728", "#1f77b4"] }, legend: { labelLimit: 400 } },
    },
  }, detail);
}

export function chartsOf(result: BenchResult): Chart[] {
  const charts = [throughputChart(result), latencyChart(result), histogramChart(result), walChart(result)];
  return charts.filter((c): c is Chart => c !== null);
}

export async function renderSvg(spec: TopLevelSpec): Promise<string> {
  const view = new vega.View(vega.parse(compile(spec).spec), { renderer: "none" });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

export function svgToPng(svg: string): Buffer {
  const resvg = new Resvg(svg, {
    fitTo: { mode: "zoom", value: 2 },
    font: { loadSystemFonts: true, defaultFontFamily: "DejaVu Sans", sansSerifFamily: "DejaVu Sans" },
  });
  return resvg.render().asPng();
}

/** Writes `<stem>-<chart>.svg` and `.png` into `dir`; returns the files written. */
export async function writeCharts(result: BenchResult, dir: string, stem: string): Promise<string[]> {
  const files: string[] = [];
  for (const chart of chartsOf(result)) {
    const svg = await renderSvg(chart.spec);
    const base = join(dir, `${stem}-${chart.name}`);
    writeFileSync(`${base}.svg`, svg);
    writeFileSync(`${base}.png`, svgToPng(svg));
    files.push(`${base}.svg`, `${base}.png`);
  }
  return files;
}
