// hearctl's snapshot of a running PipeWire, through libpipewire. One call connects, lists the
// graph, reads what hearctl shows, and disconnects; the facts arrive as text lines (fields
// separated by tabs) handed to a callback, so the Swift side needs none of SPA's macros:
//
//   server  <version> <name>            the daemon (core info)
//   library <version>                   the libpipewire hearctl runs with
//   global  <id> <type>                 every object (nodes, links, metadata, ...)
//   prop    <id> <key> <value>          properties of nodes and links (global and info props)
//   state   <id> <state> <error>        node state: running, idle, suspended, creating, error
//   control <id> <name> <value>         a node's Props param entries (filter-chain: "hear:gain" 6)
//   format  <id> <rate> <channels>      a node's negotiated audio format
//   meta    <metadata> <key> <value>    subject-0 entries of the "settings" and "default" metadata
//   error   <where> <message>           the snapshot is incomplete (no daemon, a timeout)
//
// hear_pw_set_default_metadata sets (or, with a NULL value, removes) one entry of the "default"
// metadata, as `pw-metadata` does: `hearctl device set` sets a stream node's target.object there
// so that WirePlumber re-links it at once.
#ifndef HEAR_CPIPEWIRE_SHIM_H
#define HEAR_CPIPEWIRE_SHIM_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <pipewire/pipewire.h>
#include <pipewire/extensions/metadata.h>
#include <spa/param/audio/format-utils.h>
#include <spa/param/props.h>
#include <spa/pod/iter.h>
#include <spa/pod/parser.h>
#include <spa/utils/dict.h>
#include <spa/utils/result.h>

typedef void (*hear_pw_emit_fn)(void *context, const char *line);

#define HEAR_PW_MAX_BOUND 256
#define HEAR_PW_ROUNDS 3

struct hear_pw_snapshot;

struct hear_pw_bound {
    struct pw_proxy *proxy;
    struct spa_hook listener;
    uint32_t id;
    char metadata[32];
    struct hear_pw_snapshot *snapshot;
};

struct hear_pw_snapshot {
    struct pw_main_loop *loop;
    struct pw_core *core;
    struct pw_registry *registry;
    struct spa_hook core_listener;
    struct spa_hook registry_listener;
    struct hear_pw_bound bound[HEAR_PW_MAX_BOUND];
    int bound_count;
    int pending;
    int rounds;
    hear_pw_emit_fn emit;
    void *context;
};

// Values must not break the line format: tabs and newlines become spaces.
static inline void hear_pw_emitf(struct hear_pw_snapshot *s, const char *format, ...) {
    char line[1024];
    va_list args;
    va_start(args, format);
    vsnprintf(line, sizeof line, format, args);
    va_end(args);
    for (char *c = line; *c; c++) {
        if (*c == '\n' || *c == '\r') *c = ' ';
    }
    s->emit(s->context, line);
}

static inline const char *hear_pw_clean(char *buffer, size_t size, const char *text) {
    snprintf(buffer, size, "%s", text ? text : "");
    for (char *c = buffer; *c; c++) {
        if (*c == '\t' || *c == '\n' || *c == '\r') *c = ' ';
    }
    return buffer;
}

static inline void hear_pw_emit_props(struct hear_pw_snapshot *s, uint32_t id, const struct spa_dict *props) {
    const struct spa_dict_item *item;
    char key[256], value[512];
    if (props == NULL) return;
    spa_dict_for_each(item, props) {
        hear_pw_emitf(s, "prop\t%u\t%s\t%s", id, hear_pw_clean(key, sizeof key, item->key),
                      hear_pw_clean(value, sizeof value, item->value));
    }
}

static inline void hear_pw_node_info(void *data, const struct pw_node_info *info) {
    struct hear_pw_bound *b = (struct hear_pw_bound *)data;
    char error[256];
    hear_pw_emitf(b->snapshot, "state\t%u\t%s\t%s", b->id, pw_node_state_as_string(info->state),
                  hear_pw_clean(error, sizeof error, info->error));
    hear_pw_emit_props(b->snapshot, b->id, info->props);
}

static inline void hear_pw_node_param(void *data, int seq, uint32_t id, uint32_t index, uint32_t next,
                                      const struct spa_pod *param) {
    struct hear_pw_bound *b = (struct hear_pw_bound *)data;
    (void)seq; (void)index; (void)next;
    if (param == NULL) return;
    if (id == SPA_PARAM_Format) {
        struct spa_audio_info_raw raw;
        uint32_t media_type = 0, media_subtype = 0;
        if (spa_format_parse(param, &media_type, &media_subtype) < 0 || media_type != SPA_MEDIA_TYPE_audio ||
            media_subtype != SPA_MEDIA_SUBTYPE_raw) return;
        spa_zero(raw);
        if (spa_format_audio_raw_parse(param, &raw) >= 0) {
            hear_pw_emitf(b->snapshot, "format\t%u\t%u\t%u", b->id, raw.rate, raw.channels);
        }
        return;
    }
    if (id != SPA_PARAM_Props || !spa_pod_is_object(param)) return;
    const struct spa_pod_object *object = (const struct spa_pod_object *)param;
    const struct spa_pod_prop *prop;
    SPA_POD_OBJECT_FOREACH(object, prop) {
        if (prop->key != SPA_PROP_params || !spa_pod_is_struct(&prop->value)) continue;
        // A struct of name, value, name, value, ...
        const char *name = NULL;
        struct spa_pod *item;
        SPA_POD_FOREACH(SPA_POD_BODY(&prop->value), SPA_POD_BODY_SIZE(&prop->value), item) {
            if (name == NULL) {
                if (spa_pod_get_string(item, &name) < 0) name = NULL;
                continue;
            }
            float f; double d; int32_t i; int64_t l; bool flag;
            char clean[256];
            hear_pw_clean(clean, sizeof clean, name);
            if (spa_pod_get_float(item, &f) == 0) hear_pw_emitf(b->snapshot, "control\t%u\t%s\t%.9g", b->id, clean, (double)f);
            else if (spa_pod_get_double(item, &d) == 0) hear_pw_emitf(b->snapshot, "control\t%u\t%s\t%.17g", b->id, clean, d);
            else if (spa_pod_get_int(item, &i) == 0) hear_pw_emitf(b->snapshot, "control\t%u\t%s\t%d", b->id, clean, i);
            else if (spa_pod_get_long(item, &l) == 0) hear_pw_emitf(b->snapshot, "control\t%u\t%s\t%lld", b->id, clean, (long long)l);
            else if (spa_pod_get_bool(item, &flag) == 0) hear_pw_emitf(b->snapshot, "control\t%u\t%s\t%d", b->id, clean, flag ? 1 : 0);
            name = NULL;
        }
    }
}

static inline int hear_pw_metadata_property(void *data, uint32_t subject, const char *key, const char *type,
                                            const char *value) {
    struct hear_pw_bound *b = (struct hear_pw_bound *)data;
    char clean_key[256], clean_value[512];
    (void)type;
    if (subject == PW_ID_CORE && key != NULL) {
        hear_pw_emitf(b->snapshot, "meta\t%s\t%s\t%s", b->metadata, hear_pw_clean(clean_key, sizeof clean_key, key),
                      hear_pw_clean(clean_value, sizeof clean_value, value));
    }
    return 0;
}

static inline void hear_pw_registry_global(void *data, uint32_t id, uint32_t permissions, const char *type,
                                           uint32_t version, const struct spa_dict *props) {
    struct hear_pw_snapshot *s = (struct hear_pw_snapshot *)data;
    (void)permissions; (void)version;
    hear_pw_emitf(s, "global\t%u\t%s", id, type);
    int node = strcmp(type, PW_TYPE_INTERFACE_Node) == 0;
    int link = strcmp(type, PW_TYPE_INTERFACE_Link) == 0;
    int metadata = strcmp(type, PW_TYPE_INTERFACE_Metadata) == 0;
    if (node || link || metadata) hear_pw_emit_props(s, id, props);
    const char *name = metadata && props ? spa_dict_lookup(props, PW_KEY_METADATA_NAME) : NULL;
    int wanted_metadata = name && (strcmp(name, "settings") == 0 || strcmp(name, "default") == 0);
    if ((!node && !wanted_metadata) || s->bound_count >= HEAR_PW_MAX_BOUND) return;

    struct hear_pw_bound *b = &s->bound[s->bound_count];
    memset(b, 0, sizeof *b);
    b->id = id;
    b->snapshot = s;
    if (node) {
        static const struct pw_node_events node_events = {
            PW_VERSION_NODE_EVENTS, .info = hear_pw_node_info, .param = hear_pw_node_param,
        };
        b->proxy = (struct pw_proxy *)pw_registry_bind(s->registry, id, PW_TYPE_INTERFACE_Node, PW_VERSION_NODE, 0);
        if (b->proxy == NULL) return;
        pw_proxy_add_object_listener(b->proxy, &b->listener, &node_events, b);
        pw_node_enum_params((struct pw_node *)b->proxy, 0, SPA_PARAM_Props, 0, UINT32_MAX, NULL);
        pw_node_enum_params((struct pw_node *)b->proxy, 0, SPA_PARAM_Format, 0, UINT32_MAX, NULL);
    } else {
        static const struct pw_metadata_events metadata_events = {
            PW_VERSION_METADATA_EVENTS, .property = hear_pw_metadata_property,
        };
        snprintf(b->metadata, sizeof b->metadata, "%s", name);
        b->proxy = (struct pw_proxy *)pw_registry_bind(s->registry, id, PW_TYPE_INTERFACE_Metadata, PW_VERSION_METADATA, 0);
        if (b->proxy == NULL) return;
        pw_proxy_add_object_listener(b->proxy, &b->listener, &metadata_events, b);
    }
    s->bound_count++;
}

static inline void hear_pw_core_info(void *data, const struct pw_core_info *info) {
    struct hear_pw_snapshot *s = (struct hear_pw_snapshot *)data;
    hear_pw_emitf(s, "server\t%s\t%s", info->version ? info->version : "", info->name ? info->name : "");
}

// Each sync answers after everything asked before it; a few rounds cover binds and their replies.
static inline void hear_pw_core_done(void *data, uint32_t id, int seq) {
    struct hear_pw_snapshot *s = (struct hear_pw_snapshot *)data;
    if (id != PW_ID_CORE || seq != s->pending) return;
    if (++s->rounds < HEAR_PW_ROUNDS) s->pending = pw_core_sync(s->core, PW_ID_CORE, s->pending);
    else pw_main_loop_quit(s->loop);
}

static inline void hear_pw_core_error(void *data, uint32_t id, int seq, int res, const char *message) {
    struct hear_pw_snapshot *s = (struct hear_pw_snapshot *)data;
    (void)seq;
    if (id == PW_ID_CORE) {
        hear_pw_emitf(s, "error\tcore\t%s (%s)", message ? message : "", spa_strerror(res));
        pw_main_loop_quit(s->loop);
    }
}

static inline void hear_pw_timeout(void *data, uint64_t expirations) {
    struct hear_pw_snapshot *s = (struct hear_pw_snapshot *)data;
    (void)expirations;
    hear_pw_emitf(s, "error\ttimeout\tPipeWire did not answer in time");
    pw_main_loop_quit(s->loop);
}

/// Takes the snapshot, calling `emit` once per line. Returns 0, or a negative errno when no
/// PipeWire daemon could be reached (then an `error connect` line says why).
static inline int hear_pw_take_snapshot(hear_pw_emit_fn emit, void *context, int timeout_ms) {
    static struct hear_pw_snapshot s;  // large (the bound table); hearctl takes one snapshot at a time
    memset(&s, 0, sizeof s);
    s.emit = emit;
    s.context = context;
    pw_init(NULL, NULL);
    hear_pw_emitf(&s, "library\t%s", pw_get_library_version());
    s.loop = pw_main_loop_new(NULL);
    if (s.loop == NULL) return -errno;
    struct pw_context *pw_context = pw_context_new(pw_main_loop_get_loop(s.loop), NULL, 0);
    if (pw_context == NULL) { int err = -errno; pw_main_loop_destroy(s.loop); return err; }
    s.core = pw_context_connect(pw_context, NULL, 0);
    if (s.core == NULL) {
        int err = -errno;
        hear_pw_emitf(&s, "error\tconnect\t%s", spa_strerror(err));
        pw_context_destroy(pw_context);
        pw_main_loop_destroy(s.loop);
        return err;
    }
    static const struct pw_core_events core_events = {
        PW_VERSION_CORE_EVENTS, .info = hear_pw_core_info, .done = hear_pw_core_done, .error = hear_pw_core_error,
    };
    static const struct pw_registry_events registry_events = {
        PW_VERSION_REGISTRY_EVENTS, .global = hear_pw_registry_global,
    };
    pw_core_add_listener(s.core, &s.core_listener, &core_events, &s);
    s.registry = pw_core_get_registry(s.core, PW_VERSION_REGISTRY, 0);
    pw_registry_add_listener(s.registry, &s.registry_listener, &registry_events, &s);
    s.pending = pw_core_sync(s.core, PW_ID_CORE, 0);

    struct spa_source *timer = pw_loop_add_timer(pw_main_loop_get_loop(s.loop), hear_pw_timeout, &s);
    struct timespec value = { timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L }, interval = { 0, 0 };
    pw_loop_update_timer(pw_main_loop_get_loop(s.loop), timer, &value, &interval, false);
    pw_main_loop_run(s.loop);

    for (int i = 0; i < s.bound_count; i++) {
        spa_hook_remove(&s.bound[i].listener);
        pw_proxy_destroy(s.bound[i].proxy);
    }
    spa_hook_remove(&s.registry_listener);
    pw_proxy_destroy((struct pw_proxy *)s.registry);
    spa_hook_remove(&s.core_listener);
    pw_core_disconnect(s.core);
    pw_context_destroy(pw_context);
    pw_main_loop_destroy(s.loop);
    return 0;
}

// MARK: Setting one entry of the "default" metadata

struct hear_pw_setter {
    struct pw_main_loop *loop;
    struct pw_core *core;
    struct pw_registry *registry;
    struct pw_metadata *metadata;
    struct spa_hook core_listener;
    struct spa_hook registry_listener;
    int pending;
    int stage;   // 0: listing globals, 1: the entry was set and a sync sent after it
    int result;
};

static inline void hear_pw_setter_global(void *data, uint32_t id, uint32_t permissions, const char *type,
                                         uint32_t version, const struct spa_dict *props) {
    struct hear_pw_setter *s = (struct hear_pw_setter *)data;
    (void)permissions; (void)version;
    if (s->metadata != NULL || strcmp(type, PW_TYPE_INTERFACE_Metadata) != 0 || props == NULL) return;
    const char *name = spa_dict_lookup(props, PW_KEY_METADATA_NAME);
    if (name == NULL || strcmp(name, "default") != 0) return;
    s->metadata = (struct pw_metadata *)pw_registry_bind(s->registry, id, PW_TYPE_INTERFACE_Metadata, PW_VERSION_METADATA, 0);
}

static inline void hear_pw_setter_done(void *data, uint32_t id, int seq) {
    struct hear_pw_setter *s = (struct hear_pw_setter *)data;
    if (id == PW_ID_CORE && seq == s->pending) pw_main_loop_quit(s->loop);
}

static inline void hear_pw_setter_error(void *data, uint32_t id, int seq, int res, const char *message) {
    struct hear_pw_setter *s = (struct hear_pw_setter *)data;
    (void)seq; (void)message;
    if (id == PW_ID_CORE || s->stage == 1) { s->result = res < 0 ? res : -EIO; pw_main_loop_quit(s->loop); }
}

static inline void hear_pw_setter_timeout(void *data, uint64_t expirations) {
    struct hear_pw_setter *s = (struct hear_pw_setter *)data;
    (void)expirations;
    s->result = -ETIMEDOUT;
    pw_main_loop_quit(s->loop);
}

/// Sets `key` of `subject` in the "default" metadata to `value` (type `type`, may be NULL), or
/// removes it when `value` is NULL. Returns 0, -ENOENT when there is no "default" metadata (no
/// session manager), or another negative errno (no daemon, a refusal, a timeout).
static inline int hear_pw_set_default_metadata(uint32_t subject, const char *key, const char *type, const char *value,
                                               int timeout_ms) {
    struct hear_pw_setter s;
    memset(&s, 0, sizeof s);
    pw_init(NULL, NULL);
    s.loop = pw_main_loop_new(NULL);
    if (s.loop == NULL) return -errno;
    struct pw_context *context = pw_context_new(pw_main_loop_get_loop(s.loop), NULL, 0);
    if (context == NULL) { int err = -errno; pw_main_loop_destroy(s.loop); return err; }
    s.core = pw_context_connect(context, NULL, 0);
    if (s.core == NULL) { int err = -errno; pw_context_destroy(context); pw_main_loop_destroy(s.loop); return err; }
    static const struct pw_core_events core_events = {
        PW_VERSION_CORE_EVENTS, .done = hear_pw_setter_done, .error = hear_pw_setter_error,
    };
    static const struct pw_registry_events registry_events = {
        PW_VERSION_REGISTRY_EVENTS, .global = hear_pw_setter_global,
    };
    pw_core_add_listener(s.core, &s.core_listener, &core_events, &s);
    s.registry = pw_core_get_registry(s.core, PW_VERSION_REGISTRY, 0);
    pw_registry_add_listener(s.registry, &s.registry_listener, &registry_events, &s);
    struct spa_source *timer = pw_loop_add_timer(pw_main_loop_get_loop(s.loop), hear_pw_setter_timeout, &s);
    struct timespec when = { timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L }, interval = { 0, 0 };
    pw_loop_update_timer(pw_main_loop_get_loop(s.loop), timer, &when, &interval, false);

    // Every global arrives before the answer to the first sync.
    s.pending = pw_core_sync(s.core, PW_ID_CORE, 0);
    pw_main_loop_run(s.loop);
    if (s.result == 0 && s.metadata == NULL) s.result = -ENOENT;
    if (s.result == 0) {
        s.stage = 1;
        pw_metadata_set_property(s.metadata, subject, key, value != NULL ? type : NULL, value);
        // The answer to this sync comes after the daemon has handled the change (or sent an error).
        s.pending = pw_core_sync(s.core, PW_ID_CORE, s.pending);
        pw_main_loop_run(s.loop);
    }
    if (s.metadata != NULL) pw_proxy_destroy((struct pw_proxy *)s.metadata);
    spa_hook_remove(&s.registry_listener);
    pw_proxy_destroy((struct pw_proxy *)s.registry);
    spa_hook_remove(&s.core_listener);
    pw_core_disconnect(s.core);
    pw_context_destroy(context);
    pw_main_loop_destroy(s.loop);
    return s.result;
}

#endif
