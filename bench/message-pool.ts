/** The messages the convoy's clients append: about 300 characters each, the same for every mode. */
import { writeFileSync } from "node:fs";
import { Random } from "./random.js";
import { TextGenerator, type GeneratedMessage } from "./text-generator.js";

const POOL_SIZE = 512;
const MESSAGE_LENGTH = 300;

/** Writes the pool as JSON (the Python writer reads it too) and returns its mean length. */
export function writeMessagePool(path: string, seed: number): number {
  const text = new TextGenerator(new Random(seed ^ 0x5eed));
  const messages: GeneratedMessage[] = Array.from({ length: POOL_SIZE }, (_, i) => text.convoyMessage(i, MESSAGE_LENGTH));
  writeFileSync(path, JSON.stringify(messages));
  return messages.reduce((sum, m) => sum + m.content.length, 0) / messages.length;
}
