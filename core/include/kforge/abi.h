/* kforge plugin ABI: the only thing that crosses between the kforge runtime and a
 * plugin shared object.
 *
 * Why a C ABI: plugins are built out of tree, with other compilers and other versions of
 * the C++ standard library, fmt and spdlog. Only plain C types cross this boundary; the
 * header-only C++ SDK (kforge/sdk.hpp) generates all of this for plugin authors.
 *
 * Rules that keep old plugins loadable by new hosts (and the other way round):
 *   - every struct starts with its size (or the ABI version) so either side can tell
 *     which fields the other one knows;
 *   - function tables are append-only: new entries go at the end, none is ever removed
 *     or reordered; callers check `struct_size` before touching a newer entry;
 *   - every function is noexcept in spirit: it returns a status code and never lets a
 *     C++ exception escape.
 */
#ifndef KFORGE_ABI_H
#define KFORGE_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped only when a change cannot be made append-only. A host loads plugins whose
 * abi_version lies in [KF_ABI_VERSION_MIN, KF_ABI_VERSION]. */
#define KF_ABI_VERSION 1u
#define KF_ABI_VERSION_MIN 1u

/* The one symbol every plugin exports. */
#define KF_PLUGIN_ENTRY_SYMBOL "kforge_plugin_entry"

#if defined(_WIN32)
#define KF_EXPORT __declspec(dllexport)
#else
#define KF_EXPORT __attribute__((visibility("default")))
#endif

typedef enum kf_status {
  KF_OK = 0,
  KF_ERROR = 1,            /* generic failure; the message says what */
  KF_INVALID_ARGUMENT = 2, /* bad parameter value or unknown key */
  KF_NOT_FOUND = 3,        /* the asked-for key does not exist */
  KF_CANCELLED = 4         /* the run is being cancelled */
} kf_status;

/* ---- parameter schemas ------------------------------------------------------------ */

typedef enum kf_param_type {
  KF_PARAM_STRING = 0,
  KF_PARAM_INT = 1,
  KF_PARAM_FLOAT = 2,
  KF_PARAM_BOOL = 3,
  KF_PARAM_STRING_LIST = 4,
  KF_PARAM_OBJECT = 5 /* any YAML mapping; handed over as JSON text */
} kf_param_type;

typedef struct kf_param_spec {
  const char* name;
  kf_param_type type;
  /* Default as YAML scalar/flow text ("0.5", "[a, b]", "{}"); NULL when there is none. */
  const char* default_value;
  int required; /* nonzero: must be given in the pipeline (default_value is ignored) */
  const char* doc;
} kf_param_spec;

/* ---- what the host offers plugins ------------------------------------------------- */

typedef struct kf_job kf_job;       /* opaque: one candidate of one task on its way */
typedef struct kf_config kf_config; /* opaque: validated parameters of one stage */
typedef struct kf_task kf_task;     /* opaque: a task being emitted by a source */

typedef enum kf_log_level {
  KF_LOG_TRACE = 0,
  KF_LOG_DEBUG = 1,
  KF_LOG_INFO = 2,
  KF_LOG_WARN = 3,
  KF_LOG_ERROR = 4
} kf_log_level;

/* Verdict of one stage for one job. FAIL is "the candidate is wrong" (a finding);
 * ERROR is "the stage could not judge" (infrastructure). Both route through `fail`
 * unless the pipeline routes `error` elsewhere. */
typedef enum kf_verdict_status {
  KF_VERDICT_PASS = 0,
  KF_VERDICT_FAIL = 1,
  KF_VERDICT_ERROR = 2
} kf_verdict_status;

/* Strings handed out by the host stay valid until the job leaves the stage call (job
 * accessors) or until destroy (config accessors). Strings handed in are copied. Lengths
 * are in bytes; strings are UTF-8 and need not be NUL-terminated when a length is given. */
typedef struct kf_host_api {
  uint32_t struct_size;
  uint32_t abi_version;

  void (*log)(kf_log_level level, const char* plugin, const char* message);

  /* Parameters (already validated, defaults filled). Lists: index from 0 to count-1. */
  kf_status (*config_string)(const kf_config* cfg, const char* name, const char** out, size_t* len);
  kf_status (*config_int)(const kf_config* cfg, const char* name, int64_t* out);
  kf_status (*config_float)(const kf_config* cfg, const char* name, double* out);
  kf_status (*config_bool)(const kf_config* cfg, const char* name, int* out);
  kf_status (*config_list_size)(const kf_config* cfg, const char* name, size_t* out);
  kf_status (*config_list_item)(const kf_config* cfg, const char* name, size_t index,
                                const char** out, size_t* len);
  /* Any parameter as JSON text (objects, lists, scalars). */
  kf_status (*config_json)(const kf_config* cfg, const char* name, const char** out, size_t* len);
  /* Directory of the pipeline file that configured this stage; relative paths in
   * parameters are meant relative to it. */
  const char* (*config_base_dir)(const kf_config* cfg);

  /* Job fields by key. Well-known keys are listed below (KF_KEY_*); any other key is a
   * free attribute that plugins use to hand data down the pipeline ("compile.artifact"). */
  kf_status (*job_get_string)(const kf_job* job, const char* key, const char** out, size_t* len);
  kf_status (*job_set_string)(kf_job* job, const char* key, const char* value, size_t len);
  kf_status (*job_get_number)(const kf_job* job, const char* key, double* out);
  kf_status (*job_set_number)(kf_job* job, const char* key, double value);

  /* The stage's verdict for this job. Called at most once per process call; a call that
   * returns KF_OK without setting one counts as PASS. `route` is NULL for the default
   * route of the status, else one of the stage kind's declared routes. */
  kf_status (*job_verdict)(kf_job* job, kf_verdict_status status, const char* route,
                           const char* error_class, const char* message);
  /* Numbers and text attached to this stage's verdict (timings, diffs, log tails). */
  kf_status (*job_metric)(kf_job* job, const char* name, double value);
  kf_status (*job_log_tail)(kf_job* job, const char* text, size_t len);

  /* Seconds left before this stage's timeout for this job (+inf when none), and whether
   * the run is being cancelled. Long stages poll these and give up early. */
  double (*job_seconds_left)(const kf_job* job);
  int (*run_cancelled)(void);

  /* Task sources: fill in the task being emitted. Keys are the KF_KEY_TASK_* ones plus
   * free "task.<name>" attributes. */
  kf_status (*task_set_string)(kf_task* task, const char* key, const char* value, size_t len);
  kf_status (*task_set_number)(kf_task* task, const char* key, double value);
} kf_host_api;

/* Well-known job keys (strings unless marked number). */
#define KF_KEY_TASK_ID "task.id"
#define KF_KEY_TASK_NAME "task.name"
#define KF_KEY_TASK_LEVEL "task.level"           /* number */
#define KF_KEY_TASK_CATEGORY "task.category"
#define KF_KEY_TASK_COMPLEXITY "task.complexity" /* C1..C4 */
#define KF_KEY_TASK_FORMAT "task.format"         /* e.g. kernelbench-torch, kernelbench-numpy */
#define KF_KEY_TASK_PATH "task.path"             /* reference source file */
#define KF_KEY_TASK_SOURCE "task.source"         /* reference source text */
#define KF_KEY_CANDIDATE_SAMPLE "candidate.sample"       /* number: 0..k-1 */
#define KF_KEY_CANDIDATE_ROUND "candidate.round"         /* number: fix round, 0 first */
#define KF_KEY_CANDIDATE_CODE "candidate.code"
#define KF_KEY_CANDIDATE_LANGUAGE "candidate.language"
#define KF_KEY_CANDIDATE_MODEL "candidate.model"
#define KF_KEY_CANDIDATE_TOKENS_IN "candidate.tokens_in"   /* number */
#define KF_KEY_CANDIDATE_TOKENS_OUT "candidate.tokens_out" /* number */
#define KF_KEY_CANDIDATE_COST "candidate.cost"             /* number: US dollars */
/* The verdict that routed the job here (read-only): stage id, status, class, message. */
#define KF_KEY_LAST_STAGE "last.stage"
#define KF_KEY_LAST_STATUS "last.status"
#define KF_KEY_LAST_ERROR_CLASS "last.error_class"
#define KF_KEY_LAST_MESSAGE "last.message"
#define KF_KEY_LAST_LOG_TAIL "last.log_tail"

/* ---- what a plugin offers the host ------------------------------------------------ */

/* Stage runs mostly wait (HTTP, child processes): the host runs it on threads of its own,
 * `concurrency` of them, so that waiting never holds a TBB worker. */
#define KF_STAGE_WAITS 0x1u
/* The verdict (and the job attributes the stage sets) depends only on the task, the
 * candidate's code and language, the stage's parameters and the plugin's version, so the
 * host may answer from its verdict cache instead of calling process (identical code from
 * an LLM is then judged once). */
#define KF_STAGE_CACHEABLE 0x2u

typedef struct kf_stage_kind {
  uint32_t struct_size;
  const char* name; /* dotted, e.g. "llm.openai"; unique across all loaded plugins */
  const char* doc;
  const kf_param_spec* params;
  uint32_t param_count;
  /* Named routes this stage may choose besides pass/fail/error (e.g. "cached"). */
  const char* const* routes;
  uint32_t route_count;
  uint32_t flags; /* KF_STAGE_* */

  /* Build one instance for one pipeline stage. On failure write a NUL-terminated
   * message into err (err_size bytes) and return non-OK. */
  kf_status (*create)(const kf_host_api* host, const kf_config* cfg, void** instance,
                      char* err, size_t err_size);
  /* Judge one job. Called concurrently, up to the stage's concurrency, on one instance.
   * Returning non-OK fails the job with the message written into err. */
  kf_status (*process)(void* instance, kf_job* job, char* err, size_t err_size);
  void (*destroy)(void* instance);
} kf_stage_kind;

/* A task source enumerates tasks; the host pulls them one at a time, so sources of any
 * size run in constant memory. */
typedef struct kf_source_kind {
  uint32_t struct_size;
  const char* name;
  const char* doc;
  const kf_param_spec* params;
  uint32_t param_count;

  kf_status (*create)(const kf_host_api* host, const kf_config* cfg, void** instance,
                      char* err, size_t err_size);
  /* Fill `task` with the next task and set *has_task to 1, or set it to 0 at the end. */
  kf_status (*next)(void* instance, kf_task* task, int* has_task, char* err, size_t err_size);
  void (*destroy)(void* instance);
  /* Optional (NULL when unknown): how many tasks `next` will emit, for progress and ETA. */
  kf_status (*count)(void* instance, uint64_t* tasks);
} kf_source_kind;

typedef struct kf_plugin_descriptor {
  uint32_t abi_version; /* first, always: read before anything else */
  uint32_t struct_size;
  const char* name;
  const char* version;
  const kf_stage_kind* const* stages;
  uint32_t stage_count;
  const kf_source_kind* const* sources;
  uint32_t source_count;
} kf_plugin_descriptor;

typedef const kf_plugin_descriptor* (*kf_plugin_entry_fn)(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KFORGE_ABI_H */
