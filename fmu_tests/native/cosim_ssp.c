/* Run an SSP archive with libcosim from C, as a C/C++ co-simulation host would: libcosimc
 * (the C API of the Open Simulation Platform's libcosim; the libcosimpy wheel ships it) loads
 * the system, runs it with the SSD's fixed-step algorithm and reads outputs at the end.
 *
 *   cosim_ssp LIBCOSIMC SSP_FILE STEPS [COMPONENT:VALUE_REFERENCE ...]
 *
 * Prints the wall time per step after the first (which initializes the system) as
 * "us_per_step X", each requested Real output as "value COMPONENT:VR HEXFLOAT", then "status OK".
 * libcosim's own messages (warnings included) go to its console log on stderr. Declares the
 * few libcosimc functions it uses (cosim.h of libcosim 0.x); loads the library with dlopen.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct cosim_execution_s cosim_execution;
typedef struct cosim_observer_s cosim_observer;
typedef struct {
    char name[1024]; /* SLAVE_NAME_MAX_SIZE */
    int index;
} cosim_slave_info;
enum { LOG_TRACE, LOG_DEBUG, LOG_INFO, LOG_WARNING, LOG_ERROR, LOG_FATAL };

static void *lib;
static void *symbol(const char *name) {
    void *f = dlsym(lib, name);
    if (!f) {
        fprintf(stderr, "libcosimc lacks %s\n", name);
        exit(2);
    }
    return f;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s LIBCOSIMC SSP_FILE STEPS [COMPONENT:VR ...]\n", argv[0]);
        return 2;
    }
    lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "cannot load %s: %s\n", argv[1], dlerror());
        return 2;
    }
    int (*setup_logging)(void) = symbol("cosim_log_setup_simple_console_logging");
    void (*log_level)(int) = symbol("cosim_log_set_output_level");
    const char *(*last_error)(void) = symbol("cosim_last_error_message");
    cosim_execution *(*create)(const char *, bool, int64_t) = symbol("cosim_ssp_execution_create");
    cosim_observer *(*last_value_observer)(void) = symbol("cosim_last_value_observer_create");
    int (*add_observer)(cosim_execution *, cosim_observer *) = symbol("cosim_execution_add_observer");
    int (*n_slaves)(cosim_execution *) = symbol("cosim_execution_get_num_slaves");
    int (*slave_infos)(cosim_execution *, cosim_slave_info *, size_t) = symbol("cosim_execution_get_slave_infos");
    int (*step)(cosim_execution *, size_t) = symbol("cosim_execution_step");
    int (*get_real)(cosim_observer *, int, const uint32_t *, size_t, double *) =
        symbol("cosim_observer_slave_get_real");
    int (*destroy_observer)(cosim_observer *) = symbol("cosim_observer_destroy");
    int (*destroy)(cosim_execution *) = symbol("cosim_execution_destroy");

    setup_logging();
    log_level(LOG_WARNING);
    cosim_execution *execution = create(argv[2], false, 0);
    if (!execution) {
        printf("status error: %s\n", last_error());
        return 1;
    }
    cosim_observer *observer = last_value_observer();
    add_observer(execution, observer);
    /* the first step initializes the system (seconds): the rest are timed apart from it */
    long steps = atol(argv[3]);
    struct timespec start, end;
    if (step(execution, 1) != 0) {
        printf("status error: %s\n", last_error());
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &start);
    if (steps > 1 && step(execution, (size_t)(steps - 1)) != 0) {
        printf("status error: %s\n", last_error());
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &end);
    if (steps > 1)
        printf("us_per_step %.3f\n", 1e6 * ((end.tv_sec - start.tv_sec) + 1e-9 * (end.tv_nsec - start.tv_nsec)) /
                                          (double)(steps - 1));
    int n = n_slaves(execution);
    cosim_slave_info *infos = calloc((size_t)n, sizeof *infos);
    slave_infos(execution, infos, (size_t)n);
    for (int i = 4; i < argc; i++) {
        char name[1024];
        uint32_t vr = 0;
        double value = 0.0;
        if (sscanf(argv[i], "%1023[^:]:%u", name, &vr) != 2) continue;
        int index = -1;
        for (int k = 0; k < n; k++)
            if (!strcmp(infos[k].name, name)) index = infos[k].index;
        if (index < 0 || get_real(observer, index, &vr, 1, &value) != 0) {
            printf("status error: cannot read %s\n", argv[i]);
            return 1;
        }
        printf("value %s %a\n", argv[i], value);
    }
    free(infos);
    destroy(execution);
    destroy_observer(observer);
    printf("status OK\n");
    fflush(stdout);
    return 0;
}
