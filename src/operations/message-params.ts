/** The argument checks of the message operations (SPEC §3, appendMessage … messageCount). */
import type { OpName } from "../operation-catalogue.js";
import {
  checkTotalText, field, jsonColumn, nonEmpty, optBoundCount, optInteger, optObject, optStr, optText, optTimestamp, str, type Args,
} from "./args.js";

/** Tool calls counted for a message: an array's length, 1 for any other value, 0 when absent. */
export function toolCallCount(toolCalls: unknown): number {
  if (toolCalls === undefined || toolCalls === null) return 0;
  return Array.isArray(toolCalls) ? toolCalls.length : 1;
}

export function parseAppendMessage(args: Args, op: OpName) {
  const msg = optObject(args[1], "msg");
  const toolCalls = jsonColumn(msg, "toolCalls", "msg");
  const params = {
    sessionId: str(args[0], "sessionId"),
    role: nonEmpty(field(msg, "role"), "msg.role"),
    content: optText(field(msg, "content"), "msg.content"),
    toolCallId: optStr(field(msg, "toolCallId"), "msg.toolCallId"),
    toolCalls: toolCalls.text,
    toolName: optStr(field(msg, "toolName"), "msg.toolName"),
    tokenCount: optInteger(field(msg, "tokenCount"), "msg.tokenCount"),
    // The reference's own bind of token_count (optBoundCount), replacing tokenCount when given.
    tokenCountBound: optBoundCount(field(msg, "tokenCountBound"), "msg.tokenCountBound"),
    finishReason: optStr(field(msg, "finishReason"), "msg.finishReason"),
    reasoning: optText(field(msg, "reasoning"), "msg.reasoning"),
    reasoningDetails: jsonColumn(msg, "reasoningDetails", "msg").text,
    codexReasoningItems: jsonColumn(msg, "codexReasoningItems", "msg").text,
    toolCallIncrement: toolCallCount(toolCalls.value),
    // The time the message was written, when the caller knows it (a replayed spool record); else now.
    timestamp: optTimestamp(field(msg, "timestamp"), "msg.timestamp"),
  };
  checkTotalText(op, [params.content, params.toolCalls, params.reasoning, params.reasoningDetails, params.codexReasoningItems]);
  return params;
}

/** The operations that take a session's id and nothing else. */
export const parseMessagesOf = (args: Args) => ({ sessionId: str(args[0], "sessionId") });

export const parseMessageCount = (args: Args) => ({
  sessionId: optStr(field(optObject(args[0], "opts"), "sessionId"), "opts.sessionId"),
});
