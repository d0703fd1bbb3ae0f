/* A minimal FMI 2.0 co-simulation host, as native tools (Dymola, OMSimulator, libcosim) drive
 * an FMU: dlopen the binary, instantiate, initialize, step, read outputs, free, exit.
 *
 *   fmi2_host UNZIPPED_DIR MODEL_IDENTIFIER GUID [options]
 *     --set VR=VALUE      set a Real before initialization (repeatable)
 *     --string VR=TEXT    set a String parameter before initialization (repeatable)
 *     --each-step         set those Reals again before every step, as a master sets inputs
 *     --out VR[,VR...]    Real value references read after every step
 *     --steps N --step H  N communication steps of H seconds (default 2000 of 1e-4)
 *     --state K           after step K: get the state, serialize it, deserialize it, run
 *                         to the end, restore the deserialized state, run to the end again;
 *                         both runs must give the same outputs bit for bit
 *     --logging           loggingOn = true (default false)
 *     --dlclose           dlclose the binary before exiting
 *     --timing            print the wall time per step (inputs set, doStep, outputs read)
 *     --foreign-states    after initialization, give fmi2SetFMUstate, fmi2SerializedFMUstateSize,
 *                         fmi2SerializeFMUstate and fmi2FreeFMUstate a pointer the FMU never
 *                         handed out and one it handed out and freed; print "foreign WHICH
 *                         CALL STATUS" for each (these statuses are not checked for OK)
 *
 * Prints the last outputs as C99 hex floats (exact), "status OK" if every call returned
 * fmi2OK, and otherwise names the first call that did not. Exit status 0 when every call
 * was OK, 1 otherwise. Declares the FMI 2.0 types it needs itself (fmi2FunctionTypes.h).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef void *fmi2Component;
typedef void *fmi2ComponentEnvironment;
typedef void *fmi2FMUstate;
typedef unsigned int fmi2ValueReference;
typedef double fmi2Real;
typedef int fmi2Boolean;
typedef char fmi2Byte;
typedef const char *fmi2String;
typedef enum { fmi2OK, fmi2Warning, fmi2Discard, fmi2Error, fmi2Fatal, fmi2Pending } fmi2Status;
typedef enum { fmi2ModelExchange, fmi2CoSimulation } fmi2Type;
typedef struct {
    void (*logger)(fmi2ComponentEnvironment, fmi2String, fmi2Status, fmi2String, fmi2String, ...);
    void *(*allocateMemory)(size_t, size_t);
    void (*freeMemory)(void *);
    void (*stepFinished)(fmi2ComponentEnvironment, fmi2Status);
    fmi2ComponentEnvironment componentEnvironment;
} fmi2CallbackFunctions;

static const char *STATUS[] = {"OK", "Warning", "Discard", "Error", "Fatal", "Pending"};

static void logger(fmi2ComponentEnvironment env, fmi2String instance, fmi2Status status, fmi2String category,
                   fmi2String message, ...) {
    (void)env;
    va_list args;
    va_start(args, message);
    fprintf(stderr, "[%s] %s %s: ", STATUS[status], instance ? instance : "", category ? category : "");
    vfprintf(stderr, message, args);
    fputc('\n', stderr);
    va_end(args);
}

static void *lib;
static void *symbol(const char *name) {
    void *f = dlsym(lib, name);
    if (!f) {
        fprintf(stderr, "missing symbol %s\n", name);
        exit(2);
    }
    return f;
}

static int failures = 0;
static void check(fmi2Status status, const char *call) {
    if (status != fmi2OK) {
        if (!failures) printf("status %s from %s\n", STATUS[status], call);
        failures++;
    }
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s UNZIPPED_DIR MODEL_IDENTIFIER GUID [options]\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1], *id = argv[2], *guid = argv[3];
    fmi2ValueReference set_vr[64], out_vr[256];
    double set_value[64], out[256], first[256];
    fmi2ValueReference string_vr[16];
    fmi2String string_value[16];
    int n_strings = 0;
    int n_set = 0, n_out = 0, steps = 2000, state_at = -1, logging = 0, close_lib = 0, timing = 0, each = 0,
        foreign = 0;
    double h = 1e-4;
    for (int i = 4; i < argc; i++) {
        if (!strcmp(argv[i], "--set") && i + 1 < argc) {
            sscanf(argv[++i], "%u=%lf", &set_vr[n_set], &set_value[n_set]);
            n_set++;
        } else if (!strcmp(argv[i], "--string") && i + 1 < argc && n_strings < 16) {
            char *text = argv[++i], *eq = strchr(text, '=');
            if (!eq) {
                fprintf(stderr, "--string needs VR=TEXT\n");
                return 2;
            }
            string_vr[n_strings] = (fmi2ValueReference)atoi(text);
            string_value[n_strings++] = eq + 1;
        } else if (!strcmp(argv[i], "--out") && i + 1 < argc) {
            for (char *tok = strtok(argv[++i], ","); tok; tok = strtok(NULL, ",")) out_vr[n_out++] = atoi(tok);
        } else if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--step") && i + 1 < argc) h = atof(argv[++i]);
        else if (!strcmp(argv[i], "--state") && i + 1 < argc) state_at = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--each-step")) each = 1;
        else if (!strcmp(argv[i], "--logging")) logging = 1;
        else if (!strcmp(argv[i], "--dlclose")) close_lib = 1;
        else if (!strcmp(argv[i], "--timing")) timing = 1;
        else if (!strcmp(argv[i], "--foreign-states")) foreign = 1;
        else {
            fprintf(stderr, "unknown option %s\n", argv[i]);
            return 2;
        }
    }

    char path[4096], uri[4096];
    snprintf(path, sizeof path, "%s/binaries/linux64/%s.so", dir, id);
    snprintf(uri, sizeof uri, "file://%s/resources", dir);
    lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        printf("dlopen failed: %s\n", dlerror());
        return 1;
    }
    fmi2Component (*instantiate)(fmi2String, fmi2Type, fmi2String, fmi2String, const fmi2CallbackFunctions *,
                                 fmi2Boolean, fmi2Boolean) = symbol("fmi2Instantiate");
    fmi2Status (*setup)(fmi2Component, fmi2Boolean, fmi2Real, fmi2Real, fmi2Boolean, fmi2Real) =
        symbol("fmi2SetupExperiment");
    fmi2Status (*enter)(fmi2Component) = symbol("fmi2EnterInitializationMode");
    fmi2Status (*exit_init)(fmi2Component) = symbol("fmi2ExitInitializationMode");
    fmi2Status (*set_real)(fmi2Component, const fmi2ValueReference *, size_t, const fmi2Real *) =
        symbol("fmi2SetReal");
    fmi2Status (*get_real)(fmi2Component, const fmi2ValueReference *, size_t, fmi2Real *) = symbol("fmi2GetReal");
    fmi2Status (*set_string)(fmi2Component, const fmi2ValueReference *, size_t, const fmi2String *) =
        symbol("fmi2SetString");
    fmi2Status (*do_step)(fmi2Component, fmi2Real, fmi2Real, fmi2Boolean) = symbol("fmi2DoStep");
    fmi2Status (*get_state)(fmi2Component, fmi2FMUstate *) = symbol("fmi2GetFMUstate");
    fmi2Status (*set_state)(fmi2Component, fmi2FMUstate) = symbol("fmi2SetFMUstate");
    fmi2Status (*free_state)(fmi2Component, fmi2FMUstate *) = symbol("fmi2FreeFMUstate");
    fmi2Status (*state_size)(fmi2Component, fmi2FMUstate, size_t *) = symbol("fmi2SerializedFMUstateSize");
    fmi2Status (*serialize)(fmi2Component, fmi2FMUstate, fmi2Byte *, size_t) = symbol("fmi2SerializeFMUstate");
    fmi2Status (*deserialize)(fmi2Component, const fmi2Byte *, size_t, fmi2FMUstate *) =
        symbol("fmi2DeSerializeFMUstate");
    fmi2Status (*terminate)(fmi2Component) = symbol("fmi2Terminate");
    void (*free_instance)(fmi2Component) = symbol("fmi2FreeInstance");

    fmi2CallbackFunctions callbacks = {logger, calloc, free, NULL, NULL};
    fmi2Component c = instantiate("host", fmi2CoSimulation, guid, uri, &callbacks, 0, logging);
    if (!c) {
        printf("status NULL from fmi2Instantiate\n");
        return 1;
    }
    check(setup(c, 0, 0.0, 0.0, 0, 0.0), "fmi2SetupExperiment");
    check(enter(c), "fmi2EnterInitializationMode");
    if (n_set) check(set_real(c, set_vr, n_set, set_value), "fmi2SetReal");
    if (n_strings) check(set_string(c, string_vr, n_strings, string_value), "fmi2SetString");
    check(exit_init(c), "fmi2ExitInitializationMode");
    if (foreign) {
        static char never_handed_out[256]; /* zeros: no state, whatever the FMU takes a state for */
        fmi2FMUstate freed = NULL;
        check(get_state(c, &freed), "fmi2GetFMUstate");
        fmi2FMUstate stale = freed;
        check(free_state(c, &freed), "fmi2FreeFMUstate");
        struct {
            const char *which;
            fmi2FMUstate state;
        } cases[] = {{"never-handed-out", never_handed_out}, {"freed", stale}};
        for (int k = 0; k < 2; k++) {
            fmi2FMUstate state = cases[k].state;
            size_t size = 0;
            fmi2Byte bytes[64];
            printf("foreign %s fmi2SetFMUstate %s\n", cases[k].which, STATUS[set_state(c, state)]);
            printf("foreign %s fmi2SerializedFMUstateSize %s\n", cases[k].which, STATUS[state_size(c, state, &size)]);
            printf("foreign %s fmi2SerializeFMUstate %s\n", cases[k].which,
                   STATUS[serialize(c, state, bytes, sizeof bytes)]);
            printf("foreign %s fmi2FreeFMUstate %s\n", cases[k].which, STATUS[free_state(c, &state)]);
            fflush(stdout);
        }
    }

    double t = 0.0, wall = 0.0;
    fmi2FMUstate saved = NULL;
    int saved_step = -1;
    for (int run = 0; run < (state_at >= 0 ? 2 : 1); run++) {
        if (run == 1) {  /* restore the deserialized state and repeat */
            memcpy(first, out, sizeof out);
            check(set_state(c, saved), "fmi2SetFMUstate");
            t = saved_step * h;
        }
        for (int k = (run == 1 ? saved_step : 0); k < steps; k++) {
            if (run == 0 && k == state_at) {
                fmi2FMUstate state = NULL;
                size_t size = 0;
                check(get_state(c, &state), "fmi2GetFMUstate");
                check(state_size(c, state, &size), "fmi2SerializedFMUstateSize");
                fmi2Byte *bytes = malloc(size);
                check(serialize(c, state, bytes, size), "fmi2SerializeFMUstate");
                check(free_state(c, &state), "fmi2FreeFMUstate");
                check(deserialize(c, bytes, size, &saved), "fmi2DeSerializeFMUstate");
                free(bytes);
                saved_step = k;
            }
            double tick = now();
            if (each && n_set) check(set_real(c, set_vr, n_set, set_value), "fmi2SetReal");
            check(do_step(c, t, h, 1), "fmi2DoStep");
            if (n_out) check(get_real(c, out_vr, n_out, out), "fmi2GetReal");
            wall += now() - tick;
            t = (k + 1) * h;
        }
    }
    if (saved) {
        check(free_state(c, &saved), "fmi2FreeFMUstate");
        for (int i = 0; i < n_out; i++)
            if (memcmp(&first[i], &out[i], sizeof(double))) {
                printf("state round trip differs at output %d: %a != %a\n", i, first[i], out[i]);
                failures++;
            }
    }
    for (int i = 0; i < n_out; i++) printf("out %u %a\n", out_vr[i], out[i]);
    if (timing) printf("us_per_step %.3f\n", 1e6 * wall / steps);
    check(terminate(c), "fmi2Terminate");
    free_instance(c);
    if (close_lib) dlclose(lib);
    if (!failures) printf("status OK\n");
    fflush(stdout);
    return failures ? 1 : 0;
}
