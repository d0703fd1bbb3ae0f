/* belt_fmu native FMU loader: the FMU's binaries/linux64/<modelIdentifier>.so.
 *
 * A PythonFMU FMU runs a Python slave inside the host process through PythonFMU's native
 * library (shipped beside this file as pythonfmu-export.so). On its own that library needs
 * the host to have loaded libpython and to find a suitable Python. This loader sits in front
 * of it and makes the FMU work in any native FMI 2.0 host with nothing set up:
 *
 * 1. Python. If the process already runs an interpreter (a Python host such as fmpy) it is
 *    used. Otherwise the first suitable candidate of
 *      $BELT_FMU_PYTHON, the interpreter recorded at build time (resources/native.cfg),
 *      python3 and python on $PATH
 *    is chosen: each is asked (a short subprocess) for its version, its shared libpython and
 *    whether it has the packages the FMU needs; when one before the chosen one was passed
 *    over (a BELT_FMU_PYTHON without numba), a warning to the host's logger says which and why. The chosen libpython is loaded (RTLD_GLOBAL)
 *    and initialized with that interpreter as program name (so a virtual environment's
 *    site-packages are used), without signal handlers and ignoring PYTHON* environment
 *    variables. The interpreter lives until the process ends: it is never finalized,
 *    because extension modules cannot be torn down and loaded again in one process, and a
 *    finalization inside exit() runs after other libraries' static destructors (the cause of
 *    the crashes at exit, docs/native-hosts.md). When no candidate fits, fmi2Instantiate
 *    returns NULL with a message naming every candidate tried and what to install.
 * 2. Status codes. The slave reports problems by logging them (PythonFMU cannot return
 *    fmi2Error from Python without a Python exception, and it frees a raising slave twice).
 *    Every call returns the worst of PythonFMU's status and the statuses logged during the
 *    call, so a call the slave refused returns fmi2Error. Messages at warning level and
 *    above always reach the host's logger (errors also stderr when logging is off); others
 *    follow fmi2SetDebugLogging. A deserialized state the slave could not read (an object
 *    with a `problem` attribute) is refused by fmi2DeSerializeFMUstate.
 * 3. Robustness. A NULL component is refused; after PythonFMU reported fmi2Fatal (the Python
 *    side is gone) every call returns fmi2Error and fmi2FreeInstance does not touch it.
 *    fmi2GetRealStatus(fmi2LastSuccessfulTime) and fmi2GetBooleanStatus(fmi2Terminated) are
 *    answered here. Each instance lists the states it handed out (fmi2GetFMUstate,
 *    fmi2DeSerializeFMUstate) until the host frees them: a state it never handed out, or freed,
 *    is refused with fmi2Error (PythonFMU would take it for a Python object and crash), and
 *    states left at fmi2FreeInstance are freed with it. Before the process exits (or this library is unloaded), PythonFMU's
 *    interpreter handle is released, so its own exit-time destructors have nothing left to
 *    use after free.
 * 4. Speed. Each host thread that calls the FMU keeps one Python thread state, so calls do
 *    not create and destroy a thread state each time (PyGILState_Ensure on a thread without
 *    one does).
 * 5. The fast path (belt_fmu/fast_path.py, docs/native-hosts.md). A step of the lumped model
 *    takes about a microsecond; a call into Python several (a step of the discretized model
 *    at 1e-4 s, with its output reads, pays about 60 us in Python beyond its physics). When
 *    the slave publishes an exchange block (a model stepping without failure that has a
 *    native step), fmi2SetReal of the inputs, fmi2GetReal of outputs and inputs and
 *    fmi2DoStep are answered here, on the slave's own arrays, with the model's compiled step
 *    (a numba cfunc: no Python, no GIL; called with 0 steps before outputs are read when the
 *    model computes them lazily, as the discretized one does). Only calls
 *    sure to succeed are: an input out of its range or not finite, a value reference the
 *    block does not list, a communication point other than the FMU's time, a step that is
 *    not finite and positive go to the slave as before, and so does a step that fails (a
 *    divergence, a pulley running away): the arrays it changed are restored from a copy
 *    taken before it and the slave takes the same step again (the same kernel on the same
 *    values: the same failure), with its
 *    own messages and status. Every other call goes to the slave, which first takes what
 *    was changed here and publishes the block again after. The block's address is read
 *    through fmi2GetString of an internal variable (value reference in native.cfg) after
 *    fmi2Instantiate and fmi2Reset (which makes a new slave); fmi2FreeInstance and fmi2Reset
 *    drop it first. BELT_FMU_NATIVE_FAST_PATH=0 in the environment turns the fast path off.
 *
 * The Python C API is reached through dlsym only (no Python headers): the same binary works
 * with every Python >= 3.10. Build: cc -shared -fPIC -O2 -fvisibility=hidden loader.c -ldl -lpthread
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

extern char **environ;

#define EXPORT __attribute__((visibility("default")))

/* ---------------------------------------------------------------- FMI 2.0 types */
typedef void *fmi2Component;
typedef void *fmi2ComponentEnvironment;
typedef void *fmi2FMUstate;
typedef unsigned int fmi2ValueReference;
typedef double fmi2Real;
typedef int fmi2Integer;
typedef int fmi2Boolean;
typedef char fmi2Char;
typedef const fmi2Char *fmi2String;
typedef char fmi2Byte;
typedef enum { fmi2OK, fmi2Warning, fmi2Discard, fmi2Error, fmi2Fatal, fmi2Pending } fmi2Status;
typedef enum { fmi2ModelExchange, fmi2CoSimulation } fmi2Type;
typedef enum { fmi2DoStepStatus, fmi2PendingStatus, fmi2LastSuccessfulTime, fmi2Terminated } fmi2StatusKind;
typedef void (*fmi2CallbackLogger)(fmi2ComponentEnvironment, fmi2String, fmi2Status, fmi2String, fmi2String, ...);
typedef struct {
    fmi2CallbackLogger logger;
    void *(*allocateMemory)(size_t, size_t);
    void (*freeMemory)(void *);
    void (*stepFinished)(fmi2ComponentEnvironment, fmi2Status);
    fmi2ComponentEnvironment componentEnvironment;
} fmi2CallbackFunctions;
#define fmi2True 1
#define fmi2False 0

static const char *STATUS_NAME[] = {"OK", "Warning", "Discard", "Error", "Fatal", "Pending"};

/* ---------------------------------------------------------------- Python C API, by dlsym */
typedef struct PyObject PyObject;
typedef struct PyInitConfig PyInitConfig;
static struct {
    int (*IsInitialized)(void);
    void (*InitializeEx)(int);
    void *(*SaveThread)(void);
    int (*GILState_Ensure)(void);
    void (*GILState_Release)(int);
    int (*GILState_Check)(void);
    wchar_t *(*DecodeLocale)(const char *, size_t *);
    void (*SetProgramName)(const wchar_t *);            /* Python <= 3.14 */
    int *IgnoreEnvironmentFlag;                         /* Python <= 3.14 */
    PyInitConfig *(*InitConfig_Create)(void);           /* Python >= 3.14 (PEP 741) */
    int (*InitConfig_SetStr)(PyInitConfig *, const char *, const char *);
    int (*InitConfig_SetInt)(PyInitConfig *, const char *, int64_t);
    int (*InitializeFromInitConfig)(PyInitConfig *);
    int (*InitConfig_GetError)(PyInitConfig *, const char **);
    void (*InitConfig_Free)(PyInitConfig *);
    PyObject *(*GetAttrString)(PyObject *, const char *);
    const char *(*AsUTF8)(PyObject *);
    void (*ErrClear)(void);
    void (*DecRef)(PyObject *);
} py;

static int resolve_python(void *scope) {
#define SYM(field, name) *(void **)(&py.field) = dlsym(scope, name)
    SYM(IsInitialized, "Py_IsInitialized");
    SYM(InitializeEx, "Py_InitializeEx");
    SYM(SaveThread, "PyEval_SaveThread");
    SYM(GILState_Ensure, "PyGILState_Ensure");
    SYM(GILState_Release, "PyGILState_Release");
    SYM(GILState_Check, "PyGILState_Check");
    SYM(DecodeLocale, "Py_DecodeLocale");
    SYM(SetProgramName, "Py_SetProgramName");
    SYM(IgnoreEnvironmentFlag, "Py_IgnoreEnvironmentFlag");
    SYM(InitConfig_Create, "PyInitConfig_Create");
    SYM(InitConfig_SetStr, "PyInitConfig_SetStr");
    SYM(InitConfig_SetInt, "PyInitConfig_SetInt");
    SYM(InitializeFromInitConfig, "Py_InitializeFromInitConfig");
    SYM(InitConfig_GetError, "PyInitConfig_GetError");
    SYM(InitConfig_Free, "PyInitConfig_Free");
    SYM(GetAttrString, "PyObject_GetAttrString");
    SYM(AsUTF8, "PyUnicode_AsUTF8");
    SYM(ErrClear, "PyErr_Clear");
    SYM(DecRef, "Py_DecRef");
#undef SYM
    return py.IsInitialized && py.SaveThread && py.GILState_Ensure && py.GILState_Release && py.GILState_Check &&
           py.GetAttrString && py.AsUTF8 && py.ErrClear && py.DecRef;
}

/* ---------------------------------------------------------------- PythonFMU's library */
#define PYTHONFMU_LIBRARY "pythonfmu-export.so"
#define FMI_FUNCTIONS(X)                                                                                              \
    X(fmi2Component, Instantiate, (fmi2String, fmi2Type, fmi2String, fmi2String, const fmi2CallbackFunctions *,       \
                                   fmi2Boolean, fmi2Boolean))                                                         \
    X(void, FreeInstance, (fmi2Component))                                                                            \
    X(fmi2Status, SetupExperiment, (fmi2Component, fmi2Boolean, fmi2Real, fmi2Real, fmi2Boolean, fmi2Real))          \
    X(fmi2Status, EnterInitializationMode, (fmi2Component))                                                           \
    X(fmi2Status, ExitInitializationMode, (fmi2Component))                                                            \
    X(fmi2Status, Terminate, (fmi2Component))                                                                         \
    X(fmi2Status, Reset, (fmi2Component))                                                                             \
    X(fmi2Status, GetReal, (fmi2Component, const fmi2ValueReference *, size_t, fmi2Real *))                          \
    X(fmi2Status, GetInteger, (fmi2Component, const fmi2ValueReference *, size_t, fmi2Integer *))                    \
    X(fmi2Status, GetBoolean, (fmi2Component, const fmi2ValueReference *, size_t, fmi2Boolean *))                    \
    X(fmi2Status, GetString, (fmi2Component, const fmi2ValueReference *, size_t, fmi2String *))                      \
    X(fmi2Status, SetReal, (fmi2Component, const fmi2ValueReference *, size_t, const fmi2Real *))                    \
    X(fmi2Status, SetInteger, (fmi2Component, const fmi2ValueReference *, size_t, const fmi2Integer *))              \
    X(fmi2Status, SetBoolean, (fmi2Component, const fmi2ValueReference *, size_t, const fmi2Boolean *))              \
    X(fmi2Status, SetString, (fmi2Component, const fmi2ValueReference *, size_t, const fmi2String *))                \
    X(fmi2Status, GetFMUstate, (fmi2Component, fmi2FMUstate *))                                                       \
    X(fmi2Status, SetFMUstate, (fmi2Component, fmi2FMUstate))                                                         \
    X(fmi2Status, FreeFMUstate, (fmi2Component, fmi2FMUstate *))                                                      \
    X(fmi2Status, SerializedFMUstateSize, (fmi2Component, fmi2FMUstate, size_t *))                                    \
    X(fmi2Status, SerializeFMUstate, (fmi2Component, fmi2FMUstate, fmi2Byte *, size_t))                               \
    X(fmi2Status, DeSerializeFMUstate, (fmi2Component, const fmi2Byte *, size_t, fmi2FMUstate *))                     \
    X(fmi2Status, DoStep, (fmi2Component, fmi2Real, fmi2Real, fmi2Boolean))

static struct {
#define FIELD(ret, name, args) ret(*name) args;
    FMI_FUNCTIONS(FIELD)
#undef FIELD
    void (*release_interpreter_handle)(void); /* PythonFMU's finalizePythonInterpreter */
} inner;

/* ---------------------------------------------------------------- the fast path's block */
/* The slave's exchange block: belt_fmu/fast_path.py, class Block (same fields, same order). */
#define FAST_MAGIC 0x62656C7466700002ULL
#define FAST_MAX_INPUTS 8
#define FAST_INPUT_SLOT (-2) /* slot of input k: FAST_INPUT_SLOT - k */
typedef int64_t (*FastKernel)(const int64_t *arguments, int64_t n_steps, double dt, double crank_omega,
                              double water_pump_torque, int64_t *taken);
typedef struct {
    uint64_t magic;
    int64_t usable;  /* slave: the step's calls may be answered here */
    int64_t touched; /* here: inputs, time or the model changed since the slave last looked */
    double time, time_tolerance, drive_time, max_step, crank_sense;
    int64_t n_inputs, crank_input, pump_input;
    int64_t input_vr[FAST_MAX_INPUTS];
    double input_value[FAST_MAX_INPUTS], input_low[FAST_MAX_INPUTS], input_high[FAST_MAX_INPUTS];
    int64_t n_vr;
    const int64_t *slot; /* value reference -> -1, an output's index, or an input's slot */
    double *outputs;
    int64_t n_outputs;
    int64_t n_saved;
    const int64_t *saved;   /* (address, bytes) of each array a step changes */
    int64_t report_outputs; /* 1: kernel(arguments, 0 steps, ...) brings the outputs up to date */
    FastKernel kernel;
    const int64_t *kernel_arguments;
} FastBlock;

static pthread_mutex_t setup_lock = PTHREAD_MUTEX_INITIALIZER;
static int ready = 0; /* Python running and PythonFMU loaded */
static __thread int pinned = 0;

/* ---------------------------------------------------------------- instances and logging */
typedef struct {
    void *inner;                   /* PythonFMU's component */
    fmi2CallbackFunctions host;    /* the host's callbacks */
    fmi2CallbackFunctions own;     /* given to PythonFMU: our logger, this instance as environment */
    char *name;
    int logging_on;                /* host's debug logging */
    char **categories;             /* host's categories; none: all */
    size_t n_categories;
    fmi2Status worst;              /* worst status logged during the current call */
    int broken;                    /* PythonFMU reported fmi2Fatal: its Python side is gone */
    double last_successful_time;
    long exchange_vr;              /* the fast path's exchange variable, or -1 (none, or turned off) */
    FastBlock *block;              /* the slave's exchange block, or NULL */
    char exchange_text[32];        /* the exchange variable's value, when block is set */
    char *copy;                    /* the arrays a fast step changes, as they were before it */
    size_t copy_size;
    int fast_announced;            /* the first fast step was logged */
    fmi2FMUstate *states;          /* the states this instance handed out and the host has not freed */
    size_t n_states, states_size;
} Instance;

static fmi2Status worse(fmi2Status a, fmi2Status b) { return a > b ? a : b; }

static int category_enabled(const Instance *inst, fmi2String category) {
    if (!inst->logging_on) return 0;
    if (inst->n_categories == 0) return 1;
    for (size_t i = 0; i < inst->n_categories; i++)
        if (category && !strcmp(inst->categories[i], category)) return 1;
    return 0;
}

/* Pass a message to the host: warnings and worse always, others per fmi2SetDebugLogging;
   errors also to stderr when the host's logging is off (or it gave no logger). */
static void emit(const fmi2CallbackFunctions *host, const char *name, int logging_on, int enabled,
                 fmi2Status status, fmi2String category, const char *text) {
    if ((status >= fmi2Warning || enabled) && host && host->logger) {
        /* FMI's message is a printf format, but hosts that cannot read variable arguments
           (Python ones) print it as it is: pass the text itself, with % written as %% */
        char format[8192];
        size_t k = 0;
        for (const char *p = text; *p && k < sizeof format - 2; p++) {
            if (*p == '%') format[k++] = '%';
            format[k++] = *p;
        }
        format[k] = 0;
        host->logger(host->componentEnvironment, name, status, category ? category : "", format);
    }
    if (status >= fmi2Error && (!logging_on || !host || !host->logger)) {
        fprintf(stderr, "belt_fmu FMU %s [%s]: %s\n", name ? name : "", STATUS_NAME[status], text);
        fflush(stderr);
    }
}

static void report(Instance *inst, fmi2Status status, const char *format, ...) {
    char text[2048];
    va_list args;
    va_start(args, format);
    vsnprintf(text, sizeof text, format, args);
    va_end(args);
    inst->worst = worse(inst->worst, status);
    emit(&inst->host, inst->name, inst->logging_on, category_enabled(inst, NULL), status, "logStatusError", text);
}

/* The logger PythonFMU calls: its message is plain text, not a format. */
static void inner_logger(fmi2ComponentEnvironment env, fmi2String name, fmi2Status status, fmi2String category,
                         fmi2String message, ...) {
    Instance *inst = (Instance *)env;
    (void)name;
    if (status > fmi2Pending) status = fmi2Error;
    inst->worst = worse(inst->worst, status);
    emit(&inst->host, inst->name, inst->logging_on, category_enabled(inst, category), status, category,
         message ? message : "");
}

/* ---------------------------------------------------------------- finding a Python */
typedef struct {
    char text[8192]; /* what was tried, for the error message */
    size_t used;
} Trail;

static void trail_add(Trail *t, const char *format, ...) {
    va_list args;
    va_start(args, format);
    int n = vsnprintf(t->text + t->used, sizeof t->text - t->used, format, args);
    va_end(args);
    if (n > 0) t->used = t->used + (size_t)n < sizeof t->text ? t->used + (size_t)n : sizeof t->text - 1;
}

typedef struct {
    char python[1024];      /* recorded interpreter */
    char packages[512];     /* space-separated module names the slave needs */
    char guid[128];
    long fast_path_vr;      /* value reference of the fast path's exchange variable, or -1 */
} Settings;

static void read_settings(const char *resources, Settings *s) {
    char path[4096], line[2048];
    memset(s, 0, sizeof *s);
    s->fast_path_vr = -1;
    snprintf(path, sizeof path, "%s/native.cfg", resources);
    FILE *f = fopen(path, "r");
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        char *eq = strchr(line, '=');
        if (line[0] == '#' || !eq) continue;
        *eq = 0;
        char *key = line, *value = eq + 1;
        while (*value == ' ') value++;
        for (char *end = eq - 1; end >= key && *end == ' '; end--) *end = 0;
        if (!strcmp(key, "python")) snprintf(s->python, sizeof s->python, "%s", value);
        else if (!strcmp(key, "packages")) snprintf(s->packages, sizeof s->packages, "%s", value);
        else if (!strcmp(key, "guid")) snprintf(s->guid, sizeof s->guid, "%s", value);
        else if (!strcmp(key, "fast_path_vr")) s->fast_path_vr = strtol(value, NULL, 10);
    }
    fclose(f);
}

/* What a candidate interpreter says of itself (the probe script prints key=value lines). */
typedef struct {
    char version[64], executable[1024], libpython[1024], missing[512];
} Probe;

#define PROBE_RESOURCE "native_probe.py" /* belt_fmu/build/native_loader/probe.py */

/* Run `python -E <resources>/native_probe.py packages...`; 0 if it answered. */
static int probe(const char *python, const char *script, const char *packages, Probe *out, char *why,
                 size_t why_size) {
    memset(out, 0, sizeof *out);
    char pkgs[512];
    snprintf(pkgs, sizeof pkgs, "%s", packages);
    char *argv[40] = {(char *)python, "-E", (char *)script};
    int argc = 3;
    for (char *tok = strtok(pkgs, " "); tok && argc < 38; tok = strtok(NULL, " ")) argv[argc++] = tok;
    argv[argc] = NULL;

    int fds[2];
    if (pipe(fds) != 0) {
        snprintf(why, why_size, "cannot run it (pipe: %s)", strerror(errno));
        return -1;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", 0, 0);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", 1, 0);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    posix_spawn_file_actions_addclose(&actions, fds[1]);
    pid_t pid;
    int rc = posix_spawn(&pid, python, &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        snprintf(why, why_size, "cannot run it (%s)", strerror(rc));
        return -1;
    }
    char buffer[8192];
    size_t used = 0;
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        struct pollfd p = {fds[0], POLLIN, 0};
        if (poll(&p, 1, 1000) > 0) {
            ssize_t n = read(fds[0], buffer + used, sizeof buffer - 1 - used);
            if (n <= 0) break;
            used += (size_t)n;
            if (used >= sizeof buffer - 1) break;
        }
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec > 60) {
            kill(pid, SIGKILL);
            break;
        }
    }
    buffer[used] = 0;
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    for (char *line = strtok(buffer, "\n"); line; line = strtok(NULL, "\n")) {
        char *eq = strchr(line, '=');
        if (!eq) continue;
        *eq = 0;
#define TAKE(key) if (!strcmp(line, #key)) snprintf(out->key, sizeof out->key, "%s", eq + 1)
        TAKE(version);
        TAKE(executable);
        TAKE(libpython);
        TAKE(missing);
#undef TAKE
    }
    if (!out->version[0]) {
        snprintf(why, why_size, "it did not answer as a Python does (exit status %d)",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        return -1;
    }
    return 0;
}

/* Whether `probe` describes a Python the FMU can run in; else why not. */
static int suitable(const Probe *p, const char *python, char *why, size_t why_size) {
    int major = 0, minor = 0;
    sscanf(p->version, "%d.%d", &major, &minor);
    if (major < 3 || (major == 3 && minor < 10)) {
        snprintf(why, why_size, "Python %s; the FMU needs Python >= 3.10", p->version);
        return 0;
    }
    if (!p->libpython[0]) {
        snprintf(why, why_size,
                 "Python %s has no shared libpython (built without --enable-shared); install your "
                 "distribution's libpython%d.%d package or use a Python built with --enable-shared",
                 p->version, major, minor);
        return 0;
    }
    if (p->missing[0]) {
        snprintf(why, why_size, "Python %s lacks %s: %s -m pip install %s", p->version, p->missing, python,
                 p->missing);
        return 0;
    }
    return 1;
}

/* `name` on $PATH (or the default path), into `out`; 0 if found. */
static int on_path(const char *name, char *out, size_t size) {
    const char *path = getenv("PATH");
    char fallback[256];
    if (!path || !*path) {
        size_t n = confstr(_CS_PATH, fallback, sizeof fallback);
        path = n ? fallback : "/usr/bin:/bin";
    }
    char copy[8192];
    snprintf(copy, sizeof copy, "%s", path);
    for (char *dir = strtok(copy, ":"); dir; dir = strtok(NULL, ":")) {
        snprintf(out, size, "%s/%s", *dir ? dir : ".", name);
        if (access(out, X_OK) == 0) return 0;
    }
    return -1;
}

/* Start the interpreter of `p` in this process; NULL on success, else a message. */
static const char *start_python(const Probe *p, char *why, size_t why_size) {
    void *lib = dlopen(p->libpython, RTLD_NOW | RTLD_GLOBAL);
    if (!lib) {
        snprintf(why, why_size, "cannot load %s: %s", p->libpython, dlerror());
        return why;
    }
    if (!resolve_python(lib)) {
        snprintf(why, why_size, "%.900s lacks the Python C API functions the loader needs", p->libpython);
        return why;
    }
    if (py.IsInitialized()) return NULL; /* another FMU loaded the same Python first */
    if (py.SetProgramName && py.DecodeLocale && py.InitializeEx) {
        /* the program name leaves the wide string in use: it is kept for the process's life */
        wchar_t *program = py.DecodeLocale(p->executable, NULL);
        if (program) py.SetProgramName(program);
        if (py.IgnoreEnvironmentFlag) *py.IgnoreEnvironmentFlag = 1;
        py.InitializeEx(0); /* 0: leave the host's signal handlers alone */
    } else if (py.InitConfig_Create && py.InitializeFromInitConfig) {
        PyInitConfig *config = py.InitConfig_Create();
        const char *error = NULL;
        if (!config || py.InitConfig_SetStr(config, "program_name", p->executable) < 0 ||
            py.InitConfig_SetInt(config, "use_environment", 0) < 0 ||
            py.InitConfig_SetInt(config, "install_signal_handlers", 0) < 0 ||
            py.InitializeFromInitConfig(config) < 0) {
            if (config) py.InitConfig_GetError(config, &error);
            snprintf(why, why_size, "Python %s did not start: %s", p->version, error ? error : "unknown error");
            if (config) py.InitConfig_Free(config);
            return why;
        }
        py.InitConfig_Free(config);
    } else {
        snprintf(why, why_size, "%.900s offers no way to start the interpreter that the loader knows", p->libpython);
        return why;
    }
    if (!py.IsInitialized()) {
        snprintf(why, why_size, "Python %s did not start", p->version);
        return why;
    }
    py.SaveThread(); /* release the GIL; this thread keeps its (main) thread state */
    pinned = 1;
    return NULL;
}

/* Find and start a Python, or use the one running; NULL on success, else a message. On
   success `passed_over` says which candidates before the chosen one were not suitable and why
   (empty if none), for the host's log: a BELT_FMU_PYTHON that lacks a package must not be
   passed over in silence. */
static const char *ensure_python(const Settings *s, const char *resources, char *message, size_t size,
                                 char *passed_over, size_t passed_size) {
    passed_over[0] = 0;
    if (resolve_python(RTLD_DEFAULT) && py.IsInitialized()) return NULL; /* a Python host, or loaded before */

    Trail trail = {{0}, 0};
    char script[4096];
    snprintf(script, sizeof script, "%s/%s", resources, PROBE_RESOURCE);
    const char *packages = s->packages[0] ? s->packages : "numpy numba";
    struct {
        const char *what;
        char path[1024];
    } candidates[4];
    int n = 0;
    const char *env = getenv("BELT_FMU_PYTHON");
    candidates[n].what = "$BELT_FMU_PYTHON";
    snprintf(candidates[n++].path, sizeof candidates[0].path, "%s", env && *env ? env : "");
    candidates[n].what = "the interpreter recorded when the FMU was built";
    snprintf(candidates[n++].path, sizeof candidates[0].path, "%s", s->python);
    const char *names[] = {"python3", "python"};
    for (int k = 0; k < 2; k++) {
        candidates[n].what = k == 0 ? "python3 on PATH" : "python on PATH";
        if (on_path(names[k], candidates[n].path, sizeof candidates[0].path) != 0) candidates[n].path[0] = 0;
        n++;
    }
    int refused = 0; /* candidates that were there but not suitable */
    for (int k = 0; k < n; k++) {
        char why[1024];
        Probe p;
        if (!candidates[k].path[0]) {
            trail_add(&trail, "\n  %s: %s", candidates[k].what, k == 0 ? "not set" : "none");
            continue;
        }
        if (probe(candidates[k].path, script, packages, &p, why, sizeof why) != 0 ||
            !suitable(&p, candidates[k].path, why, sizeof why)) {
            trail_add(&trail, "\n  %s = %s: %s", candidates[k].what, candidates[k].path, why);
            refused++;
            continue;
        }
        if (!start_python(&p, why, sizeof why)) {
            if (refused)
                snprintf(passed_over, passed_size, "the FMU runs in %s = %s (Python %s); before it:%s",
                         candidates[k].what, candidates[k].path, p.version, trail.text);
            return NULL;
        }
        trail_add(&trail, "\n  %s = %s: %s", candidates[k].what, candidates[k].path, why);
        refused++;
    }
    snprintf(message, size,
             "no Python this FMU can run in was found. It needs Python >= 3.10 with a shared libpython and "
             "the packages %s. Tried:%s\nInstall them into one of these (python3 -m pip install %s), or set "
             "BELT_FMU_PYTHON to the python executable of an environment that has them.",
             packages, trail.text, packages);
    return message;
}

static const char *load_pythonfmu(char *message, size_t size) {
    Dl_info info;
    if (!dladdr((void *)&load_pythonfmu, &info) || !info.dli_fname) {
        snprintf(message, size, "cannot locate the FMU's binary folder");
        return message;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s", info.dli_fname);
    char *slash = strrchr(path, '/');
    snprintf(slash ? slash + 1 : path, sizeof path - (slash ? (size_t)(slash + 1 - path) : 0), "%s",
             PYTHONFMU_LIBRARY);
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(message, size, "cannot load %s: %s", path, dlerror());
        return message;
    }
#define LOOKUP(ret, name, args)                                                                                    \
    *(void **)(&inner.name) = dlsym(lib, "fmi2" #name);                                                            \
    if (!inner.name) {                                                                                             \
        snprintf(message, size, "%s lacks fmi2" #name, path);                                                     \
        return message;                                                                                            \
    }
    FMI_FUNCTIONS(LOOKUP)
#undef LOOKUP
    *(void **)(&inner.release_interpreter_handle) = dlsym(lib, "finalizePythonInterpreter");
    return NULL;
}

/* Keep one Python thread state for each calling thread (see 4. above). */
static void pin_thread(void) {
    if (pinned || !ready) return;
    if (py.GILState_Check()) return; /* called from Python holding the GIL: leave it be */
    py.GILState_Ensure();
    py.SaveThread();
    pinned = 1;
}

/* PythonFMU keeps its interpreter handle in a static object whose destructor runs among the
   exit handlers and whose library destructor then uses it again (a use after free at exit).
   Releasing it first, from an exit handler registered after PythonFMU's (so it runs before),
   leaves both with nothing to do. Its instances never use the handle: releasing it is safe
   whatever lives. */
static void release_interpreter_handle(void) {
    if (ready && inner.release_interpreter_handle) inner.release_interpreter_handle();
}

/* ---------------------------------------------------------------- the fast path */
/* Read the slave's exchange block (its address is the value of the exchange variable). */
static void attach_block(Instance *inst) {
    inst->block = NULL;
    inst->fast_announced = 0;
    if (inst->exchange_vr < 0 || inst->broken) return;
    fmi2ValueReference vr = (fmi2ValueReference)inst->exchange_vr;
    fmi2String text = NULL;
    inst->worst = fmi2OK;
    fmi2Status status = inner.GetString(inst->inner, &vr, 1, &text);
    if (status == fmi2Fatal) inst->broken = 1;
    if (worse(status, inst->worst) != fmi2OK || !text) return;
    char *end = NULL;
    unsigned long long address = strtoull(text, &end, 16);
    FastBlock *block = (FastBlock *)(uintptr_t)address;
    if (address && end && !*end && block->magic == FAST_MAGIC) {
        inst->block = block;
        snprintf(inst->exchange_text, sizeof inst->exchange_text, "%s", text);
    }
}

/* fmi2GetString of the exchange variable alone (hosts that record local variables read it
   at every step): its value, without Python. 1 if done here. */
static int fast_get_string(Instance *inst, const fmi2ValueReference vr[], size_t n, fmi2String value[]) {
    if (!inst->block || inst->broken || !vr || !value || n == 0) return 0;
    for (size_t i = 0; i < n; i++)
        if ((long)vr[i] != inst->exchange_vr) return 0;
    for (size_t i = 0; i < n; i++) value[i] = inst->exchange_text;
    return 1;
}

static void drop_block(Instance *inst) { inst->block = NULL; }

/* The block, if the step's calls may be answered here now. */
static FastBlock *fast_block(Instance *inst) {
    FastBlock *b = inst->block;
    return b && b->usable == 1 && !inst->broken ? b : NULL;
}

/* The slot of value reference `vr`: an output's index (>= 0), an input's slot, or -1. */
static int64_t fast_slot(const FastBlock *b, fmi2ValueReference vr) {
    if ((int64_t)vr >= b->n_vr) return -1;
    int64_t slot = b->slot[vr];
    if (slot >= b->n_outputs || (slot < 0 && FAST_INPUT_SLOT - slot >= b->n_inputs)) return -1;
    return slot;
}

/* fmi2SetReal of inputs, each finite and in its range (as the slave checks): 1 if done here. */
static int fast_set_real(Instance *inst, const fmi2ValueReference vr[], size_t n, const fmi2Real value[]) {
    FastBlock *b = fast_block(inst);
    if (!b || !vr || !value) return 0;
    for (size_t i = 0; i < n; i++) {
        int64_t slot = fast_slot(b, vr[i]);
        if (slot > FAST_INPUT_SLOT) return 0;
        int64_t k = FAST_INPUT_SLOT - slot;
        if (!(isfinite(value[i]) && value[i] >= b->input_low[k] && value[i] <= b->input_high[k])) return 0;
    }
    for (size_t i = 0; i < n; i++) b->input_value[FAST_INPUT_SLOT - b->slot[vr[i]]] = value[i];
    b->touched = 1;
    return 1;
}

/* fmi2GetReal of outputs and inputs: 1 if done here. A model whose outputs are computed
   when first read (report_outputs) computes them first, as the slave's reading does. */
static int fast_get_real(Instance *inst, const fmi2ValueReference vr[], size_t n, fmi2Real value[]) {
    FastBlock *b = fast_block(inst);
    if (!b || !vr || !value) return 0;
    int outputs = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t slot = fast_slot(b, vr[i]);
        if (slot == -1) return 0;
        if (slot >= 0) outputs = 1;
    }
    if (outputs && b->report_outputs) {
        int64_t taken = 0;
        if (b->kernel(b->kernel_arguments, 0, 0.0, 0.0, 0.0, &taken) != 0) return 0;
    }
    for (size_t i = 0; i < n; i++) {
        int64_t slot = b->slot[vr[i]];
        value[i] = slot >= 0 ? b->outputs[slot] : b->input_value[FAST_INPUT_SLOT - slot];
    }
    return 1;
}

/* Copy the arrays a step changes (the block's saved table) to inst->copy, or back: 1 if done. */
static int fast_save(Instance *inst, const FastBlock *b, int restore) {
    size_t size = 0;
    for (int64_t k = 0; k < b->n_saved; k++) size += (size_t)b->saved[2 * k + 1];
    if (!restore && size > inst->copy_size) {
        char *copy = realloc(inst->copy, size);
        if (!copy) return 0;
        inst->copy = copy;
        inst->copy_size = size;
    }
    size_t at = 0;
    for (int64_t k = 0; k < b->n_saved; k++) {
        char *array = (char *)(uintptr_t)b->saved[2 * k];
        size_t bytes = (size_t)b->saved[2 * k + 1];
        if (restore)
            memcpy(array, inst->copy + at, bytes);
        else
            memcpy(inst->copy + at, array, bytes);
        at += bytes;
    }
    return 1;
}

/* fmi2DoStep as the slave and the model's advance take it: 1 if done here. A step the slave
   would refuse, and one that fails (the arrays it changed are then restored), are not. */
static int fast_do_step(Instance *inst, double t, double h) {
    FastBlock *b = fast_block(inst);
    if (!b || !(isfinite(h) && h > 0.0) || !isfinite(t)) return 0;
    double scale = fabs(b->time) > 1.0 ? fabs(b->time) : 1.0; /* max(1 s, |t|), as the slave */
    if (!(fabs(t - b->time) <= b->time_tolerance * scale)) return 0;
    double steps = ceil(h / b->max_step - 1e-9); /* n_steps = max(1, ceil(h / dt_max - 1e-9)) */
    if (!(steps <= 1e9)) return 0;                /* (a step that long: the slave's business) */
    if (steps < 1.0) steps = 1.0;
    if (!fast_save(inst, b, 0)) return 0;
    int64_t taken = 0;
    int64_t status = b->kernel(b->kernel_arguments, (int64_t)steps, h / steps,
                               b->crank_sense * b->input_value[b->crank_input], b->input_value[b->pump_input],
                               &taken);
    if (status != 0) {
        fast_save(inst, b, 1);
        return 0;
    }
    b->drive_time += h;
    b->time = t + h; /* the host's clock, as the slave keeps it */
    b->touched = 1;
    inst->last_successful_time = t + h;
    if (!inst->fast_announced) { /* once per slave, at the debug level (fmi2SetDebugLogging) */
        inst->fast_announced = 1;
        emit(&inst->host, inst->name, inst->logging_on, category_enabled(inst, "logAll"), fmi2OK, "logAll",
             "fast path: fmi2SetReal, fmi2GetReal and fmi2DoStep are answered natively "
             "(BELT_FMU_NATIVE_FAST_PATH=0 turns this off)");
    }
    return 1;
}

/* ---------------------------------------------------------------- states */
/* The states an instance handed out (fmi2GetFMUstate, fmi2DeSerializeFMUstate) and the host
   has not freed. PythonFMU takes a state for a Python object: a pointer it never made, or one
   already freed, would crash the host, so every call that takes a state checks it here first. */
static int state_index(const Instance *inst, fmi2FMUstate state) {
    for (size_t i = 0; i < inst->n_states; i++)
        if (inst->states[i] == state) return (int)i;
    return -1;
}

static int remember_state(Instance *inst, fmi2FMUstate state) {
    if (inst->n_states == inst->states_size) {
        size_t size = inst->states_size ? 2 * inst->states_size : 8;
        fmi2FMUstate *states = realloc(inst->states, size * sizeof *states);
        if (!states) return 0;
        inst->states = states;
        inst->states_size = size;
    }
    inst->states[inst->n_states++] = state;
    return 1;
}

static void forget_state(Instance *inst, int index) { inst->states[index] = inst->states[--inst->n_states]; }

/* 1 if `state` is one this instance handed out and has not freed; else an error is logged. */
static int known_state(Instance *inst, const char *call, fmi2FMUstate state) {
    if (state && state_index(inst, state) >= 0) return 1;
    report(inst, fmi2Error, state ? "%s: the state %p was not handed out by this instance (fmi2GetFMUstate or "
                                    "fmi2DeSerializeFMUstate) or was freed already; nothing was done"
                                  : "%s: the state is NULL",
           call, (void *)state);
    return 0;
}

/* A state PythonFMU made that the host cannot have: freed here (PythonFMU's fmi2FreeFMUstate). */
static void release_state(Instance *inst, fmi2FMUstate state) {
    pin_thread();
    inner.FreeFMUstate(inst->inner, &state);
}

/* ---------------------------------------------------------------- the FMI 2.0 functions */
EXPORT const char *fmi2GetTypesPlatform(void) { return "default"; }
EXPORT const char *fmi2GetVersion(void) { return "2.0"; }

static char *resources_path(fmi2String uri) {
    if (!uri) return NULL;
    const char *p = uri;
    if (!strncmp(p, "file://", 7)) {
        p += 7;
        if (!strncmp(p, "localhost/", 10)) p += 9;
    } else if (!strncmp(p, "file:", 5)) {
        p += 5;
    }
    char *out = malloc(strlen(p) + 1), *o = out;
    for (; *p; p++) {
        unsigned int c;
        if (*p == '%' && sscanf(p + 1, "%2x", &c) == 1) {
            *o++ = (char)c;
            p += 2;
        } else {
            *o++ = *p;
        }
    }
    *o = 0;
    size_t len = strlen(out);
    while (len > 1 && out[len - 1] == '/') out[--len] = 0;
    return out;
}

EXPORT fmi2Component fmi2Instantiate(fmi2String name, fmi2Type type, fmi2String guid, fmi2String resource_uri,
                                     const fmi2CallbackFunctions *functions, fmi2Boolean visible,
                                     fmi2Boolean logging_on) {
    Instance *inst = calloc(1, sizeof *inst);
    if (!inst) return NULL;
    if (functions) inst->host = *functions;
    inst->name = strdup(name ? name : "");
    inst->logging_on = logging_on;
    char message[12288], passed_over[12288] = "";
    const char *failure = NULL;
    char *resources = resources_path(resource_uri);
    Settings settings;
    read_settings(resources ? resources : ".", &settings);
    if (type != fmi2CoSimulation) {
        failure = "this FMU is for co-simulation only (fmuType must be fmi2CoSimulation)";
    } else if (settings.guid[0] && (!guid || strcmp(guid, settings.guid))) {
        snprintf(message, sizeof message, "GUID %s does not match this FMU's %s (modelDescription.xml)",
                 guid ? guid : "(null)", settings.guid);
        failure = message;
    } else {
        pthread_mutex_lock(&setup_lock);
        if (!ready) {
            failure = ensure_python(&settings, resources ? resources : ".", message, sizeof message, passed_over,
                                    sizeof passed_over);
            if (!failure) failure = load_pythonfmu(message, sizeof message);
            if (!failure) {
                ready = 1;
                atexit(release_interpreter_handle);
            }
        }
        pthread_mutex_unlock(&setup_lock);
    }
    free(resources);
    if (failure) {
        emit(&inst->host, inst->name, logging_on, 0, fmi2Error, "logStatusError", failure);
        free(inst->name);
        free(inst);
        return NULL;
    }
    if (passed_over[0]) emit(&inst->host, inst->name, logging_on, 0, fmi2Warning, "logStatusWarning", passed_over);
    pin_thread();
    inst->own.logger = inner_logger;
    inst->own.allocateMemory = inst->host.allocateMemory ? inst->host.allocateMemory : calloc;
    inst->own.freeMemory = inst->host.freeMemory ? inst->host.freeMemory : free;
    inst->own.componentEnvironment = inst;
    inst->inner = inner.Instantiate(name, type, guid, resource_uri, &inst->own, visible, fmi2True);
    if (!inst->inner) {
        free(inst->name);
        free(inst);
        return NULL;
    }
    const char *fast = getenv("BELT_FMU_NATIVE_FAST_PATH");
    inst->exchange_vr = fast && !strcmp(fast, "0") ? -1 : settings.fast_path_vr;
    attach_block(inst);
    return inst;
}

/* The common frame of a forwarded call: refuse a NULL or broken instance, reset the worst
   logged status, call, and return the worse of the two. */
#define FORWARD(c, call)                                                                                          \
    do {                                                                                                          \
        Instance *inst = (Instance *)(c);                                                                         \
        if (!inst) return fmi2Error;                                                                              \
        if (inst->broken) {                                                                                       \
            report(inst, fmi2Error, "%s refused: the instance failed fatally before", __func__);                \
            return fmi2Error;                                                                                     \
        }                                                                                                         \
        pin_thread();                                                                                             \
        inst->worst = fmi2OK;                                                                                     \
        fmi2Status status = inner.call;                                                                           \
        if (status == fmi2Fatal) inst->broken = 1;                                                                \
        return worse(status, inst->worst);                                                                        \
    } while (0)

#define INNER ((Instance *)c)->inner

EXPORT void fmi2FreeInstance(fmi2Component c) {
    Instance *inst = (Instance *)c;
    if (!inst) return;
    drop_block(inst);
    free(inst->copy);
    if (!inst->broken) {
        /* states the host did not free go with the instance (FMI 2.0: it frees all its memory) */
        for (size_t i = 0; i < inst->n_states; i++) release_state(inst, inst->states[i]);
        pin_thread();
        inner.FreeInstance(inst->inner);
    }
    free(inst->states);
    for (size_t i = 0; i < inst->n_categories; i++) free(inst->categories[i]);
    free(inst->categories);
    free(inst->name);
    free(inst);
}

EXPORT fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean logging_on, size_t n, const fmi2String categories[]) {
    Instance *inst = (Instance *)c;
    if (!inst) return fmi2Error;
    for (size_t i = 0; i < inst->n_categories; i++) free(inst->categories[i]);
    free(inst->categories);
    inst->categories = NULL;
    inst->n_categories = 0;
    inst->logging_on = logging_on;
    if (logging_on && n > 0 && categories) {
        inst->categories = calloc(n, sizeof *inst->categories);
        for (size_t i = 0; i < n; i++) inst->categories[inst->n_categories++] = strdup(categories[i] ? categories[i] : "");
    }
    return fmi2OK;
}

EXPORT fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean tolerance_defined, fmi2Real tolerance,
                                      fmi2Real start, fmi2Boolean stop_defined, fmi2Real stop) {
    if (c) ((Instance *)c)->last_successful_time = start;
    FORWARD(c, SetupExperiment(INNER, tolerance_defined, tolerance, start, stop_defined, stop));
}
EXPORT fmi2Status fmi2EnterInitializationMode(fmi2Component c) { FORWARD(c, EnterInitializationMode(INNER)); }
EXPORT fmi2Status fmi2ExitInitializationMode(fmi2Component c) { FORWARD(c, ExitInitializationMode(INNER)); }
EXPORT fmi2Status fmi2Terminate(fmi2Component c) { FORWARD(c, Terminate(INNER)); }
EXPORT fmi2Status fmi2Reset(fmi2Component c) {
    /* PythonFMU makes a new slave: the block goes with the old one */
    Instance *inst = (Instance *)c;
    if (!inst) return fmi2Error;
    drop_block(inst);
    if (inst->broken) {
        report(inst, fmi2Error, "fmi2Reset refused: the instance failed fatally before");
        return fmi2Error;
    }
    pin_thread();
    inst->worst = fmi2OK;
    fmi2Status status = inner.Reset(inst->inner);
    if (status == fmi2Fatal) inst->broken = 1;
    status = worse(status, inst->worst);
    attach_block(inst);
    return status;
}

EXPORT fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Real value[]) {
    if (c && fast_get_real((Instance *)c, vr, n, value)) return fmi2OK;
    FORWARD(c, GetReal(INNER, vr, n, value));
}
EXPORT fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Integer value[]) {
    FORWARD(c, GetInteger(INNER, vr, n, value));
}
EXPORT fmi2Status fmi2GetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Boolean value[]) {
    FORWARD(c, GetBoolean(INNER, vr, n, value));
}
EXPORT fmi2Status fmi2GetString(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2String value[]) {
    if (c && fast_get_string((Instance *)c, vr, n, value)) return fmi2OK;
    FORWARD(c, GetString(INNER, vr, n, value));
}
EXPORT fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Real value[]) {
    if (c && fast_set_real((Instance *)c, vr, n, value)) return fmi2OK;
    FORWARD(c, SetReal(INNER, vr, n, value));
}
EXPORT fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                 const fmi2Integer value[]) {
    FORWARD(c, SetInteger(INNER, vr, n, value));
}
EXPORT fmi2Status fmi2SetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                 const fmi2Boolean value[]) {
    FORWARD(c, SetBoolean(INNER, vr, n, value));
}
EXPORT fmi2Status fmi2SetString(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2String value[]) {
    FORWARD(c, SetString(INNER, vr, n, value));
}

EXPORT fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate *state) {
    Instance *inst = (Instance *)c;
    if (!inst) return fmi2Error;
    if (!state) {
        report(inst, fmi2Error, "fmi2GetFMUstate: the pointer to the state is NULL");
        return fmi2Error;
    }
    /* a non-NULL *state must be a state of ours, which the new one replaces (FMI 2.0, 2.1.8) */
    fmi2FMUstate old = *state;
    if (old && !known_state(inst, "fmi2GetFMUstate", old)) return fmi2Error;
    if (inst->broken) {
        report(inst, fmi2Error, "fmi2GetFMUstate refused: the instance failed fatally before");
        return fmi2Error;
    }
    pin_thread();
    inst->worst = fmi2OK;
    fmi2FMUstate made = NULL;
    fmi2Status status = inner.GetFMUstate(inst->inner, &made);
    if (status == fmi2Fatal) inst->broken = 1;
    status = worse(status, inst->worst);
    if (status > fmi2Warning) return status;
    if (!made) {
        report(inst, fmi2Error, "fmi2GetFMUstate: the slave gave no state");
        return fmi2Error;
    }
    if (!remember_state(inst, made)) {
        release_state(inst, made);
        report(inst, fmi2Error, "fmi2GetFMUstate: out of memory");
        return fmi2Error;
    }
    if (old) {
        forget_state(inst, state_index(inst, old));
        release_state(inst, old);
    }
    *state = made;
    return status;
}
EXPORT fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate state) {
    if (c && !known_state((Instance *)c, "fmi2SetFMUstate", state)) return fmi2Error;
    FORWARD(c, SetFMUstate(INNER, state));
}
EXPORT fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate *state) {
    Instance *inst = (Instance *)c;
    if (inst && (!state || !*state)) return fmi2OK; /* nothing to free */
    if (inst && !known_state(inst, "fmi2FreeFMUstate", *state)) return fmi2Error;
    if (inst) forget_state(inst, state_index(inst, *state));
    FORWARD(c, FreeFMUstate(INNER, state));
}
EXPORT fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate state, size_t *size) {
    if (c && !known_state((Instance *)c, "fmi2SerializedFMUstateSize", state)) return fmi2Error;
    FORWARD(c, SerializedFMUstateSize(INNER, state, size));
}
EXPORT fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate state, fmi2Byte bytes[], size_t size) {
    if (c && !known_state((Instance *)c, "fmi2SerializeFMUstate", state)) return fmi2Error;
    FORWARD(c, SerializeFMUstate(INNER, state, bytes, size));
}

/* The problem the slave found in a deserialized state (its `problem` attribute), or NULL. */
static char *state_problem(fmi2FMUstate state) {
    char *problem = NULL;
    int gil = py.GILState_Ensure();
    PyObject *text = py.GetAttrString((PyObject *)state, "problem");
    if (text) {
        const char *utf8 = py.AsUTF8(text);
        if (utf8) problem = strdup(utf8);
        py.DecRef(text);
    }
    py.ErrClear();
    py.GILState_Release(gil);
    return problem;
}

EXPORT fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte bytes[], size_t size,
                                          fmi2FMUstate *state) {
    Instance *inst = (Instance *)c;
    if (!inst || !state) return fmi2Error;
    if (!bytes && size) {
        report(inst, fmi2Error, "fmi2DeSerializeFMUstate: the bytes are NULL");
        return fmi2Error;
    }
    if (inst->broken) {
        report(inst, fmi2Error, "fmi2DeSerializeFMUstate refused: the instance failed fatally before");
        return fmi2Error;
    }
    pin_thread();
    inst->worst = fmi2OK;
    fmi2Status status = inner.DeSerializeFMUstate(inst->inner, bytes, size, state);
    if (status == fmi2Fatal) inst->broken = 1;
    status = worse(status, inst->worst);
    if (status <= fmi2Warning && *state) {
        char *problem = state_problem(*state);
        if (problem) {
            inner.FreeFMUstate(inst->inner, state);
            *state = NULL;
            report(inst, fmi2Error, "fmi2DeSerializeFMUstate: %s", problem);
            free(problem);
            return fmi2Error;
        }
        if (!remember_state(inst, *state)) {
            release_state(inst, *state);
            *state = NULL;
            report(inst, fmi2Error, "fmi2DeSerializeFMUstate: out of memory");
            return fmi2Error;
        }
    }
    return status;
}

EXPORT fmi2Status fmi2DoStep(fmi2Component c, fmi2Real t, fmi2Real h, fmi2Boolean no_set_state_prior) {
    Instance *inst = (Instance *)c;
    if (!inst) return fmi2Error;
    if (inst->broken) {
        report(inst, fmi2Error, "fmi2DoStep refused: the instance failed fatally before");
        return fmi2Error;
    }
    if (fast_do_step(inst, t, h)) return fmi2OK;
    pin_thread();
    inst->worst = fmi2OK;
    fmi2Status status = inner.DoStep(inst->inner, t, h, no_set_state_prior);
    if (status == fmi2Fatal) inst->broken = 1;
    status = worse(status, inst->worst);
    /* the slave takes a step whole or not at all: nothing of a refused step was computed */
    inst->last_successful_time = status <= fmi2Warning ? t + h : t;
    return status;
}

EXPORT fmi2Status fmi2CancelStep(fmi2Component c) {
    if (!c) return fmi2Error;
    report((Instance *)c, fmi2Error, "fmi2CancelStep: this FMU steps synchronously; there is no step to cancel");
    return fmi2Error;
}

EXPORT fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind kind, fmi2Status *value) {
    (void)value;
    if (!c) return fmi2Error;
    report((Instance *)c, fmi2Discard, "fmi2GetStatus(%d): no asynchronous step, no status to give", (int)kind);
    return fmi2Discard;
}
EXPORT fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind kind, fmi2Real *value) {
    Instance *inst = (Instance *)c;
    if (!inst || !value) return fmi2Error;
    if (kind == fmi2LastSuccessfulTime) {
        *value = inst->last_successful_time;
        return fmi2OK;
    }
    report(inst, fmi2Discard, "fmi2GetRealStatus: only fmi2LastSuccessfulTime is available");
    return fmi2Discard;
}
EXPORT fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind kind, fmi2Integer *value) {
    (void)kind;
    (void)value;
    if (!c) return fmi2Error;
    report((Instance *)c, fmi2Discard, "fmi2GetIntegerStatus: no integer status is available");
    return fmi2Discard;
}
EXPORT fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind kind, fmi2Boolean *value) {
    Instance *inst = (Instance *)c;
    if (!inst || !value) return fmi2Error;
    if (kind == fmi2Terminated) {
        *value = fmi2False; /* the model never asks to end the simulation */
        return fmi2OK;
    }
    report(inst, fmi2Discard, "fmi2GetBooleanStatus: only fmi2Terminated is available");
    return fmi2Discard;
}
EXPORT fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind kind, fmi2String *value) {
    (void)kind;
    (void)value;
    if (!c) return fmi2Error;
    report((Instance *)c, fmi2Discard, "fmi2GetStringStatus: no string status is available");
    return fmi2Discard;
}

EXPORT fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference u[], size_t nu,
                                               const fmi2ValueReference z[], size_t nz, const fmi2Real du[],
                                               fmi2Real dz[]) {
    (void)u, (void)nu, (void)z, (void)nz, (void)du, (void)dz;
    if (!c) return fmi2Error;
    report((Instance *)c, fmi2Error, "fmi2GetDirectionalDerivative: not provided (providesDirectionalDerivative "
                                     "is false)");
    return fmi2Error;
}
EXPORT fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                              const fmi2Integer order[], const fmi2Real value[]) {
    (void)vr, (void)n, (void)order, (void)value;
    if (!c) return fmi2Error;
    report((Instance *)c, fmi2Error, "fmi2SetRealInputDerivatives: not provided (canInterpolateInputs is false)");
    return fmi2Error;
}
EXPORT fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                               const fmi2Integer order[], fmi2Real value[]) {
    (void)vr, (void)n, (void)order, (void)value;
    if (!c) return fmi2Error;
    report((Instance *)c, fmi2Error, "fmi2GetRealOutputDerivatives: not provided (maxOutputDerivativeOrder is 0)");
    return fmi2Error;
}
