/* kforge plugin ABI: the only thing that crosses between the kforge runtime and a
 * plugin shared object.
 *
 * Why a C ABI: plugins are built out of tree, with other compilers and other versions of
 * the C++ standard library, fmt and spdlog. Only plain C types cross this boundary; the
 * header-only C++ SDK (kforge/sdk.hpp) generates all of this for plugin authors.
 *
 * Rules that keep old plugins loadable by new hosts (and the other way round):
 *   - every table starts with its size (or the ABI version) so either side can tell
 *     which fields the other one knows;
 *   - tables are append-only: new entries go at the end, none is ever removed or
 *     reordered. A reader checks KF_HAS_FIELD before touching an entry appended after the
 *     table's first release, and treats a NULL function entry as "not offered";
 *   - a table is never shorter than its first release (KF_*_V1_SIZE below): that is the
 *     least a host or plugin of ABI version 1 accepts;
 *   - every function is noexcept in spirit: it returns a status code and never lets a
 *     C++ exception escape.
 * Each appended entry says since when it exists ("since 0.2", kforge's version).
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

/* The bytes of `type` up to and including `field`. */
#define KF_END_OF(type, field) (offsetof(type, field) + sizeof(((type*)0)->field))
/* Whether a table (a pointer to a struct that starts with its struct_size) is long enough to
 * hold `field`: the other side was built with a header that has it. */
#define KF_HAS_FIELD(table, type, field) \
  ((table) != NULL && (size_t)(table)->struct_size >= KF_END_OF(type, field))
/* A function entry the other side offers: its table has the field and it is not NULL. */
#define KF_HAS_FUNCTION(table, type, field) (KF_HAS_FIELD(table, type, field) && (table)->field != NULL)

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
  KF_PARAM_OBJECT = 5, /* any YAML mapping; handed over as JSON text */
  /* Since 0.2. A length of time: 90s, 2m, 500ms, 1h, or a bare number of seconds (the
   * older spelling). Read with config_float, in seconds. */
  KF_PARAM_DURATION = 6
} kf_param_type;

typedef struct kf_param_spec {
  const char* name;
  kf_param_type type;
  /* Default as YAML scalar/flow text ("0.5", "[a, b]", "{}"); NULL when there is none. */
  const char* default_value;
  int required; /* nonzero: must be given in the pipeline (default_value is ignored) */
  const char* doc;
} kf_param_spec;

/* Since 0.2. What values a parameter accepts beyond its type, checked by the host when the
 * pipeline is validated (so `kforge validate` reports a bad value at its file:line:col,
 * before any stage is created). One per parameter, in kf_stage_kind::param_constraints. */
#define KF_RANGE_MIN 0x1u           /* value >= min */
#define KF_RANGE_MAX 0x2u           /* value <= max */
#define KF_RANGE_MIN_EXCLUSIVE 0x4u /* with KF_RANGE_MIN: value > min */
#define KF_RANGE_MAX_EXCLUSIVE 0x8u /* with KF_RANGE_MAX: value < max */

typedef struct kf_param_constraints {
  uint32_t struct_size;
  /* STRING (and each item of STRING_LIST): one of these; choice_count 0 for any text. */
  const char* const* choices;
  uint32_t choice_count;
  /* INT, FLOAT, DURATION (in seconds): the bounds that `range` (KF_RANGE_*) enables. */
  uint32_t range;
  double min;
  double max;
  /* Since 0.2 (read only when struct_size holds them). Names the parameter had before a
   * rename (former_name_count of them; NULL for none): a pipeline that still writes one gets
   * this parameter, and a warning at each place it is written that names the new one. Kept
   * for one release after the rename, then dropped. A rename that changes the unit keeps the
   * meaning of the old values: a DURATION takes a bare number as seconds, as an old `_s`
   * parameter did. */
  const char* const* former_names;
  uint32_t former_name_count;
} kf_param_constraints;

/* ---- what the host offers plugins ------------------------------------------------- */

typedef struct kf_job kf_job;       /* opaque: one candidate of one task on its way */
typedef struct kf_config kf_config; /* opaque: validated parameters of one stage */
typedef struct kf_task kf_task;     /* opaque: a task being emitted by a source */
typedef struct kf_export_output kf_export_output; /* opaque: the files of one export */
typedef struct kf_report_output kf_report_output; /* opaque: the tables of one report section */

typedef enum kf_log_level {
  KF_LOG_TRACE = 0,
  KF_LOG_DEBUG = 1,
  KF_LOG_INFO = 2,
  KF_LOG_WARN = 3,
  KF_LOG_ERROR = 4
} kf_log_level;

/* Verdict of one stage for one job. FAIL is "the candidate is wrong" (a finding), routed
 * through `fail`; ERROR is "the stage could not judge" (the harness, the machine or the
 * task is at fault, not the candidate), routed through `error`, which ends the job unless
 * the pipeline routes it elsewhere. An ERROR never goes into a fix stage (KF_ROLE_FIX): a
 * fix round is for the candidate's own faults. */
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

  /* Since 0.2. Whether the run this job belongs to is being cancelled (run_cancelled
   * answers for the run whose stage call is on the calling thread). */
  int (*job_cancelled)(const kf_job* job);
  /* Since 0.2. The run's secret seed: drawn from the operating system when a run starts
   * fresh, kept in the run store, the same again for `--resume`. For inputs a candidate
   * must not predict; never log it. KF_NOT_FOUND outside a run (`kforge validate`). */
  kf_status (*job_run_seed)(const kf_job* job, uint64_t* seed);
  /* Since 0.2. This stage call's verdict includes measurements (timings) that depend on
   * the moment and the machine: the verdict cache keeps it, but another run replays it
   * only when its user asks for that (`kforge run --replay-measurements`). */
  kf_status (*job_measured)(kf_job* job);
  /* Since 0.2. For exporters (kf_exporter_kind::finish): appends `len` bytes to the export's
   * file `name` (a plain file name, no directories), created on its first write. The host
   * keeps what is written aside and puts the files in place only when finish returns
   * KF_OK, so an export that fails leaves no file behind. KF_INVALID_ARGUMENT for a name
   * with a directory part. */
  kf_status (*export_write)(kf_export_output* out, const char* name, const char* data, size_t len);
  /* Since 0.2. For report sections (kf_report_section_kind::finish): begins a table of the
   * report titled `title`, with a one-line `note` saying what its numbers mean (NULL for
   * none) and `column_count` column headings; its rows follow through report_row. The
   * first column names the row; the others are right-aligned. `data_json` (data_len bytes;
   * NULL for none) is a JSON value that report.json carries beside the table for programs
   * (the numbers unformatted). KF_INVALID_ARGUMENT for an empty title, no column, or data
   * that is not JSON. */
  kf_status (*report_table)(kf_report_output* out, const char* title, const char* note, const char* const* columns,
                            uint32_t column_count, const char* data_json, size_t data_len);
  /* Since 0.2. One row of the table report_table began last: one display text per column
   * ("3/4 (75.0%)", "-"). KF_INVALID_ARGUMENT before any table or for another number of
   * cells than the table has columns. */
  kf_status (*report_row)(kf_report_output* out, const char* const* cells, uint32_t cell_count);
} kf_host_api;

/* Well-known job keys (strings unless marked number). */
#define KF_KEY_TASK_ID "task.id"
#define KF_KEY_TASK_NAME "task.name"
#define KF_KEY_TASK_LEVEL "task.level"           /* number */
#define KF_KEY_TASK_CATEGORY "task.category"
#define KF_KEY_TASK_COMPLEXITY "task.complexity" /* C1..C4 */
/* The format of the task's files, named by the plugin that reads them (the bundled eval
 * plugin's: kernelbench-torch, kernelbench-numpy, ...); report sections choose their runs by
 * it (kf_report_section_kind::task_formats). */
#define KF_KEY_TASK_FORMAT "task.format"
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
/* Since 0.2. The change a fix stage made, as a unified diff (kept by the run store). */
#define KF_KEY_CANDIDATE_DIFF "candidate.diff"
/* Since 0.2. The device that ran the candidate (cuda:1, npu:0, cpu), as a run stage
 * knows it: with a pool of devices, which one timed it. */
#define KF_KEY_CANDIDATE_DEVICE "candidate.device"
/* Since 0.2. What judged the candidate, as a run stage knows it: a JSON object of strings,
 * one per fact of the judging setup, named by the run stage (the bundled harness's: its
 * device, the accelerator's model and driver, the versions of the toolchain and framework
 * that build and run the kernel, the CPU, the host). Kept once per content in the run store;
 * the reports' Environment table has a column per fact, titled by its name, in the order the
 * facts first appear; `kforge compare` warns when a fact differs between runs, but for the
 * facts that say where a job ran rather than what ran it: KF_ENV_HOST, KF_ENV_DEVICE,
 * KF_ENV_OS, and those the object lists under KF_ENV_PLACEMENT. */
#define KF_KEY_RUN_ENVIRONMENT "run.environment"
/* Since 0.2. Facts of run.environment every run stage may give: the host's name, the device
 * that ran the job (as KF_KEY_CANDIDATE_DEVICE), the operating system. */
#define KF_ENV_HOST "host"
#define KF_ENV_DEVICE "device"
#define KF_ENV_OS "os"
/* Since 0.2. Not a fact: an array of the names of the stage's own facts that, like the host,
 * say where a job ran (which card of a model, a node's rack), so that runs that differ only
 * in them still compare. Shown last in the Environment table. */
#define KF_ENV_PLACEMENT "placement"
/* The verdict that routed the job here (read-only): stage id, status, class, message. */
#define KF_KEY_LAST_STAGE "last.stage"
#define KF_KEY_LAST_STATUS "last.status"
#define KF_KEY_LAST_ERROR_CLASS "last.error_class"
#define KF_KEY_LAST_MESSAGE "last.message"
#define KF_KEY_LAST_LOG_TAIL "last.log_tail"

/* Well-known verdict metrics (job_metric names) that reports read, since 0.2. */
#define KF_METRIC_SPEEDUP "speedup" /* reference time / candidate time, of a run stage */
/* An answer replayed from a recording: the seconds it took when it was recorded, which is
 * what generation time means for a replayed run (the replay itself takes no time). */
#define KF_METRIC_RECORDED_SECONDS "recorded_seconds"
/* Since 0.2. A run stage's correctness evidence: how many input sets it compared, and the
 * largest absolute and relative and the mean absolute difference it found (exports). A
 * nonzero KF_METRIC_SUSPICIOUS_SPEEDUP flags a speedup too large to trust. */
#define KF_METRIC_TRIALS "trials"
#define KF_METRIC_MAX_ABS_DIFF "max_abs_diff"
#define KF_METRIC_MEAN_ABS_DIFF "mean_abs_diff"
#define KF_METRIC_MAX_REL_ERROR "max_rel_error"
#define KF_METRIC_SUSPICIOUS_SPEEDUP "suspicious_speedup"
/* Since 0.2. How many times the stage's work for this verdict was lost to the
 * infrastructure (the server judging it died: a node lost, a job step cancelled or past
 * its time limit) and sent again elsewhere before this verdict. Infrastructure's, never
 * the candidate's: the reports count them apart. */
#define KF_METRIC_INFRA_RETRIES "infra_retries"
/* Since 0.2. A run stage's timings: a metric named party + statistic, for the parties
 * KF_TIMING_CANDIDATE and KF_TIMING_REFERENCE, e.g. KF_TIMING_CANDIDATE KF_TIMING_MS is
 * "candidate_ms". KF_TIMING_MS is the median of the timed calls in milliseconds, the
 * _MS_* ones the other statistics of the same calls, KF_TIMING_TRIALS how many calls were
 * timed. The reports' timing tables and the exports read these names and no others. */
#define KF_TIMING_CANDIDATE "candidate"
#define KF_TIMING_REFERENCE "reference"
#define KF_TIMING_MS "_ms"
#define KF_TIMING_MS_MEAN "_ms_mean"
#define KF_TIMING_MS_STD "_ms_std"
#define KF_TIMING_MS_MIN "_ms_min"
#define KF_TIMING_MS_P90 "_ms_p90"
#define KF_TIMING_MS_MAX "_ms_max"
#define KF_TIMING_TRIALS "_timing_trials"

/* Well-known error classes, since 0.2. A run stage that fails with a compile or syntax
 * error says the candidate did not build; any other verdict of a run stage shows it did. */
#define KF_ERROR_COMPILE "compile_error"
#define KF_ERROR_SYNTAX "syntax_error"
/* Since 0.2. A run stage's verdict on what the candidate did; reports and exports group
 * failures by them (docs/reports.md#exports). The candidate ran to the end and its outputs
 * were compared: */
#define KF_ERROR_SHAPE_MISMATCH "shape_mismatch"
#define KF_ERROR_DTYPE_MISMATCH "dtype_mismatch"
#define KF_ERROR_NUMERICAL_MISMATCH "numerical_mismatch"
#define KF_ERROR_CHEAT_DETECTED "cheat_detected" /* it ran, but gamed the comparison or timing */
/* It did not run to the end: */
#define KF_ERROR_INIT "init_error"       /* building the candidate's model failed */
#define KF_ERROR_RUNTIME "runtime_error" /* its forward raised */
#define KF_ERROR_DEVICE "device_error"   /* the device faulted while it ran */
#define KF_ERROR_CRASH "crash"           /* its process died */
#define KF_ERROR_OUT_OF_MEMORY "out_of_memory"
#define KF_ERROR_TIMEOUT "timeout"       /* it overran its own time limit */
/* It was refused before running: */
#define KF_ERROR_CHECKER_REJECTED "checker_rejected" /* a static check turned it down */
#define KF_ERROR_NO_CANDIDATE "no_candidate"         /* the job has no code to judge */
/* Given by the host: the plugin misbehaved (threw, returned an error status, misused the
 * API), or a stage call overran the stage's timeout. */
#define KF_ERROR_PLUGIN "plugin_error"
#define KF_ERROR_STAGE_TIMEOUT "stage_timeout"
/* Since 0.2. Whose fault a verdict that judged no candidate is: such a verdict has status
 * KF_VERDICT_ERROR (the host reads a FAIL with one of these classes as an ERROR), never
 * takes a route into a fix stage, and reports count it apart from the candidates' failures. */
#define KF_ERROR_HARNESS "harness_error" /* the judging machinery failed (a server died, a protocol error) */
#define KF_ERROR_HOST "host_error"       /* the machine lacks what the job needs (a toolchain, a device, room) */
#define KF_ERROR_TASK "task_error"       /* the task is broken (its reference fails as its own candidate) */

/* ---- what a plugin offers the host ------------------------------------------------ */

/* Since 0.2. What a stage kind does in the loop; reports read roles, never kind names:
 * evaluation time is the time of check, compile and run stages, generation time that of
 * generate and fix stages; compile and run verdicts tell whether the candidate built. */
typedef enum kf_stage_role {
  KF_ROLE_OTHER = 0,    /* anything else (model selection, bookkeeping) */
  KF_ROLE_GENERATE = 1, /* writes candidate.code (an LLM, a directory of files) */
  KF_ROLE_CHECK = 2,    /* judges the code without building it (static checks) */
  KF_ROLE_COMPILE = 3,  /* builds it: a pass means it compiled */
  KF_ROLE_RUN = 4,      /* runs it on a device and compares with the reference */
  KF_ROLE_FIX = 5       /* rewrites a failing candidate.code (sets candidate.diff) */
} kf_stage_role;

/* Stage runs mostly wait (HTTP, child processes): the host runs it on threads of its own,
 * `concurrency` of them, so that waiting never holds a TBB worker. */
#define KF_STAGE_WAITS 0x1u
/* The verdict (and the job attributes the stage sets) depends only on the task, the
 * candidate's code and language, the stage's parameters, the plugin's version and what the
 * stage's cache_key adds, so the host may answer from its verdict cache instead of calling
 * process (identical code from an LLM is then judged once). A verdict the stage marked
 * measured (job_measured) is replayed only when the user asks. */
#define KF_STAGE_CACHEABLE 0x2u

typedef struct kf_stage_kind {
  uint32_t struct_size;
  /* Dotted, e.g. "llm.openai"; unique across all loaded plugins. A bundled plugin's kinds
   * start with its name, which is its folder's under plugins/ (the host refuses others). */
  const char* name;
  const char* doc;
  const kf_param_spec* params;
  uint32_t param_count;
  /* Named routes this stage may choose besides pass/fail/error (e.g. "cached"). */
  const char* const* routes;
  uint32_t route_count;
  uint32_t flags; /* KF_STAGE_* */

  /* Build one instance for one pipeline stage. On failure write a NUL-terminated
   * message into err (err_size bytes) and return non-OK: a configuration error that the
   * host reports at the stage's place in the pipeline file. Creating must never start a
   * process or touch the network: the host creates and destroys every stage to validate a
   * pipeline (`kforge validate`). Start servers, children and connections on the first
   * process call instead. */
  kf_status (*create)(const kf_host_api* host, const kf_config* cfg, void** instance,
                      char* err, size_t err_size);
  /* Judge one job. Called concurrently, up to the stage's concurrency, on one instance.
   * Returning non-OK fails the job with the message written into err. */
  kf_status (*process)(void* instance, kf_job* job, char* err, size_t err_size);
  void (*destroy)(void* instance);

  /* Since 0.2 (a host that knows less leaves them alone). */
  uint32_t role; /* kf_stage_role; a role this host does not know counts as KF_ROLE_OTHER */
  /* param_count entries (NULL entries: none for that parameter), or NULL for none. */
  const kf_param_constraints* const* param_constraints;
  /* Optional (NULL: none), for KF_STAGE_CACHEABLE stages: key material the host cannot
   * know (the device model, the versions of the toolchain that judges), added to the
   * verdict cache's key of this job. Write the material into out when it fits (out_size
   * bytes) and its length into *length; when *length > out_size the host calls again with
   * a buffer that large. A non-OK status bypasses the cache for this call. */
  kf_status (*cache_key)(void* instance, const kf_job* job, char* out, size_t out_size, size_t* length);
  /* Since 0.2. Optional (NULL: nothing to check). Checks what this instance needs from the
   * run's environment, which create must not depend on (`kforge validate` creates stages
   * without needing secrets or the run's machine): API key variables, programs named
   * without a path and looked up on PATH, interpreters, toolchains. The host calls it once
   * per instance, after every stage and the task source were created and before the first
   * job, for `kforge run` and `--resume` only, never for `kforge validate`. It may read files
   * and the environment and run short probes (`python -c "import torch"`), but must not start
   * servers or touch the network. On failure write a NUL-terminated message into err
   * (err_size bytes) saying what is missing and what to install or set, and return non-OK:
   * the host reports it at the stage's place in the pipeline file and runs no job. */
  kf_status (*preflight)(void* instance, char* err, size_t err_size);
  /* Since 0.2. Optional (NULL: nothing to start). Called once per instance when the run
   * starts, after every preflight passed and before the first job, for `kforge run` and
   * `--resume` only: begins, in the background, what the stage's first job would otherwise
   * start and wait for (a server that imports a framework for seconds, a connection), so
   * that it is ready when the first job arrives (behind an LLM's first answers, say). Must
   * return at once, never wait for what it starts; what goes wrong there is the first
   * job's to report. A non-OK status (with a message in err) is logged as a warning and
   * the run goes on. */
  kf_status (*warm_up)(void* instance, char* err, size_t err_size);
  /* Since 0.2. Names the kind had before a rename (former_name_count of them; NULL for
   * none): a pipeline that still uses one gets this kind, and a warning, once per run, that
   * names the new one. Kept for one release after the rename, then dropped. */
  const char* const* former_names;
  uint32_t former_name_count;
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

  /* Since 0.2: as in kf_stage_kind. */
  const kf_param_constraints* const* param_constraints;
  /* Since 0.2. Optional (NULL: nothing to check): as kf_stage_kind::preflight, for the
   * source's instance, called before the stages' preflight. */
  kf_status (*preflight)(void* instance, char* err, size_t err_size);
  /* Since 0.2: as in kf_stage_kind. */
  const char* const* former_names;
  uint32_t former_name_count;
} kf_source_kind;

/* Since 0.2. An exporter writes a finished run's results in another tool's format
 * (`kforge export DIR --format NAME`). The host reads the run's store and hands the
 * exporter its tasks one at a time, in task order, each as the text of a JSON object
 * (docs/plugins.md#exporters lists its fields):
 *   {"strategy", "id", "name", "level", "category", "complexity", "format", "known",
 *    "jobs": [{"sample", "round", "status" ("pass", "fail", "error"), "passed", "compiled",
 *              "stage", "error_class", "message", "language", "model", "device",
 *              "environment" (object), "speedup" (number or null),
 *              "metrics" (the last run-role verdict's of the final round, object)}]}
 * then calls finish, which writes the export's files through host->export_write. */
typedef struct kf_exporter_kind {
  uint32_t struct_size;
  const char* name; /* the --format name, e.g. "records"; unique across all loaded plugins */
  const char* doc;  /* one line: what it writes, for `kforge export --format` listings */
  /* Begins one export. options_json (options_len bytes) is a JSON object of the user's
   * `--option KEY=VALUE`s; an option the exporter does not know, or a bad value, is a
   * non-OK status with a message in err (err_size bytes) that says what it accepts. */
  kf_status (*create)(const kf_host_api* host, const char* options_json, size_t options_len, void** instance,
                      char* err, size_t err_size);
  /* One task (task_len bytes of JSON, as above). A non-OK status with a message in err
   * ends the export: the run cannot be written in this format (say why and what to do). */
  kf_status (*task)(void* instance, const char* task_json, size_t task_len, char* err, size_t err_size);
  /* After the last task: writes the files through host->export_write(out, ...). */
  kf_status (*finish)(void* instance, kf_export_output* out, char* err, size_t err_size);
  void (*destroy)(void* instance);
} kf_exporter_kind;

/* Since 0.2. A report section adds a plugin's own tables to the reports (`kforge report`
 * and the reports `kforge run` writes: text, Markdown, HTML, and report.json's "tables"): a
 * benchmark's rates by category, a device's own figures. The host hands it the run's tasks
 * as it hands them to an exporter (the JSON objects of kf_exporter_kind), one at a time in
 * task order, then calls finish, which adds its tables through host->report_table and
 * host->report_row. A section that names task formats gets only the tasks of those formats
 * and is not created at all for a run without one; a section that adds no table adds nothing
 * to the report. A failing call leaves the section's tables out of the report (the host
 * logs the message), never the rest of it. */
typedef struct kf_report_section_kind {
  uint32_t struct_size;
  const char* name; /* unique across all loaded plugins, e.g. "kernelbench.categories" */
  const char* doc;  /* one line: what its tables show, for `kforge plugins list` */
  /* The KF_KEY_TASK_FORMAT values whose tasks it reports on; task_format_count 0 for every task. */
  const char* const* task_formats;
  uint32_t task_format_count;
  /* Begins the section's part of one report. Non-OK with a message in err (err_size bytes)
   * leaves its tables out. */
  kf_status (*create)(const kf_host_api* host, void** instance, char* err, size_t err_size);
  /* One task (task_len bytes of JSON). */
  kf_status (*task)(void* instance, const char* task_json, size_t task_len, char* err, size_t err_size);
  /* After the last task: adds the tables through host->report_table and host->report_row. */
  kf_status (*finish)(void* instance, kf_report_output* out, char* err, size_t err_size);
  void (*destroy)(void* instance);
} kf_report_section_kind;

typedef struct kf_plugin_descriptor {
  uint32_t abi_version; /* first, always: read before anything else */
  uint32_t struct_size;
  const char* name;
  const char* version;
  const kf_stage_kind* const* stages;
  uint32_t stage_count;
  const kf_source_kind* const* sources;
  uint32_t source_count;
  /* Since 0.2. */
  const kf_exporter_kind* const* exporters;
  uint32_t exporter_count;
  /* Since 0.2. */
  const kf_report_section_kind* const* report_sections;
  uint32_t report_section_count;
} kf_plugin_descriptor;

typedef const kf_plugin_descriptor* (*kf_plugin_entry_fn)(void);

/* The sizes of the tables as ABI version 1 first released them (kforge 0.1): no host or
 * plugin of that version hands over a shorter one. */
#define KF_HOST_API_V1_SIZE KF_END_OF(kf_host_api, task_set_number)
#define KF_STAGE_KIND_V1_SIZE KF_END_OF(kf_stage_kind, destroy)
#define KF_SOURCE_KIND_V1_SIZE KF_END_OF(kf_source_kind, count)
#define KF_PLUGIN_DESCRIPTOR_V1_SIZE KF_END_OF(kf_plugin_descriptor, source_count)
#define KF_PARAM_CONSTRAINTS_V1_SIZE KF_END_OF(kf_param_constraints, max)
/* kf_exporter_kind first came with kforge 0.2. */
#define KF_EXPORTER_KIND_V1_SIZE KF_END_OF(kf_exporter_kind, destroy)
/* kf_report_section_kind first came with kforge 0.2. */
#define KF_REPORT_SECTION_KIND_V1_SIZE KF_END_OF(kf_report_section_kind, destroy)

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KFORGE_ABI_H */
