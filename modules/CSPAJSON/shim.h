// SPA-JSON as PipeWire reads its config files, through libspa's own tokenizer. SPA offers it only
// as static inline functions; these wrap the parts hearctl's drop-in reader needs so that the
// Swift side sees plain tokens: a token is a pointer into the text and a length.
//
// The text passed to hear_json_init must be followed by a NUL byte (not counted in `size`):
// spa_json_parse_float scans a token with strspn before it converts it.
#ifndef HEAR_CSPAJSON_SHIM_H
#define HEAR_CSPAJSON_SHIM_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include <spa/utils/json.h>

static inline void hear_json_init(struct spa_json *iter, const char *text, size_t size) {
    spa_json_init(iter, text, size);
}

/// The next token: its length (its start in *token), 0 at the end of the container or the text,
/// -1 on a syntax error (an unclosed string, a control character in one, bad UTF-8, an unclosed
/// container at the end of the text).
static inline int hear_json_next(struct spa_json *iter, const char **token) {
    return spa_json_next(iter, token);
}

/// Enters the container whose opening token hear_json_next just returned. The parent resumes
/// after the container once `sub` has been read to its end.
static inline void hear_json_enter(struct spa_json *iter, struct spa_json *sub) {
    spa_json_enter(iter, sub);
}

/// Whether a container iterator that returned 0 stopped at a closing bracket, rather than at the
/// end of the text (a container that is never closed).
static inline bool hear_json_closed(const struct spa_json *sub) {
    return sub->cur < sub->end && (*sub->cur == '}' || *sub->cur == ']');
}

/// Where an iterator stands: after hear_json_closed is true, the closing bracket's address.
static inline const char *hear_json_position(const struct spa_json *iter) { return iter->cur; }

static inline bool hear_json_is_object(const char *token, int len) { return spa_json_is_object(token, len); }
static inline bool hear_json_is_array(const char *token, int len) { return spa_json_is_array(token, len); }
static inline bool hear_json_is_string(const char *token, int len) { return spa_json_is_string(token, len); }

/// A token's number, as filter-chain reads a control value (spa_json_parse_float: C locale,
/// "1e39" is +inf, a quoted "5" is not a number); true and false are 1 and 0. Returns whether
/// the token is one.
static inline bool hear_json_number(const char *token, int len, float *value) {
    bool flag;
    if (spa_json_parse_float(token, len, value) > 0) return true;
    if (spa_json_parse_bool(token, len, &flag) > 0) { *value = flag ? 1.0f : 0.0f; return true; }
    return false;
}

/// A token's text: a quoted string unescaped (\n, \uXXXX ...), a bare one as it is. `text` holds
/// at least len + 1 bytes; returns the text's length (it ends in a NUL).
static inline int hear_json_text(const char *token, int len, char *text) {
    if (spa_json_parse_stringn(token, len, text, len + 1) < 0) return -1;
    return (int)strlen(text);
}

#endif
