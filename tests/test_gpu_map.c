/* The GPU map (vec/gpu_map.c) with faked GPU counts: "local" gives the
 * k-th process of a node GPU k mod G on nodes of 1, 2, 4 and 8 GPUs (more
 * processes than GPUs wrap round), a list gives entry k mod length, a
 * single index every process, "none" leaves the device alone; malformed
 * maps, indices beyond the node's GPUs and a node without GPUs are refused
 * naming the setting and the map; KS_GPU_MAP applies only where no map is
 * given. The MPI side (local ranks, the selection on every rank):
 * test_mpi.c; the tool's report: test_cli_mpi.c. */
#include "ks_test.h"
#include "vec/gpu.h"

#include <stdlib.h>
#include <string.h>

static int pick(const char *map, int local, int ngpus)
{
    int dev = -2;
    ks_error e = ks_gpu_map_pick(map, "gpu_map", local, ngpus, &dev);
    ck_assert_msg(e == KS_OK, "map \"%s\", local rank %d, %d GPUs: %s", map, local, ngpus,
                  ks_last_error());
    return dev;
}

/* map refused with code want, the message naming the setting, the map and part. */
static void refused(const char *map, int ngpus, ks_error want, const char *part)
{
    int dev = 7;
    ks_error e = ks_gpu_map_pick(map, "gpu_map", 0, ngpus, &dev);
    char quoted[128];
    snprintf(quoted, sizeof quoted, "gpu_map \"%s\"", map);
    ck_assert_msg(e == want && strstr(ks_last_error(), quoted) && strstr(ks_last_error(), part),
                  "map \"%s\" on %d GPUs: %s (%s), expected %s mentioning '%s'", map, ngpus,
                  ks_error_name(e), ks_last_error(), ks_error_name(want), part);
    ck_assert_int_eq(dev, -1);
}

START_TEST(test_local)
{
    const int counts[] = {1, 2, 4, 8};
    for (int c = 0; c < 4; c++)
        for (int local = 0; local < 20; local++) /* up to 20 ranks a node */
            ck_assert_int_eq(pick("local", local, counts[c]), local % counts[c]);
}
END_TEST

START_TEST(test_lists_and_index)
{
    const int want[] = {0, 2, 1, 3};
    for (int local = 0; local < 12; local++) {
        ck_assert_int_eq(pick("0,2,1,3", local, 4), want[local % 4]);
        ck_assert_int_eq(pick("0,2,1,3", local, 8), want[local % 4]);
        ck_assert_int_eq(pick("3", local, 4), 3); /* every rank on GPU 3 */
        ck_assert_int_eq(pick("1,1,0", local, 2), local % 3 == 2 ? 0 : 1);
        ck_assert_int_eq(pick("7,6,5,4,3,2,1,0", local, 8), 7 - local % 8);
    }
    ck_assert_int_eq(pick("0", 5, 1), 0);
    ck_assert_int_eq(pick("007", 0, 8), 7); /* decimal, leading zeros allowed */
}
END_TEST

START_TEST(test_none)
{
    for (int g = 0; g <= 8; g++)
        ck_assert_int_eq(pick("none", 3, g), -1); /* no GPU needed to leave it alone */
}
END_TEST

START_TEST(test_bad_maps)
{
    const char *bad[] = {"", "Local", "nothing", "0,", ",0", "0,,1", "1 ", " 1", "-1", "+1",
                         "0;1", "1.5", "0x1", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        refused(bad[i], 8, KS_ERR_ARG, "expected local, none, a GPU index or a list");
    refused("4", 4, KS_ERR_ARG, "GPU 4, but this node has 4 (0 to 3)");
    refused("0,1,2", 2, KS_ERR_ARG, "GPU 2, but this node has 2 (0 to 1)");
    refused("local", 0, KS_ERR_UNSUPPORTED, "this node has no GPU");
    refused("0", 0, KS_ERR_UNSUPPORTED, "this node has no GPU");
    refused("0,x", 0, KS_ERR_ARG, "expected local, none"); /* a typo, GPUs or not */
    /* more entries than a node could use */
    char many[1200] = "0";
    for (int i = 0; i < 300; i++)
        strcat(many, ",0");
    int dev;
    ck_assert_int_eq(ks_gpu_map_pick(many, "gpu_map", 0, 1, &dev), KS_ERR_ARG);
    ck_assert_msg(strstr(ks_last_error(), "more than 256 entries"), "%s", ks_last_error());
}
END_TEST

START_TEST(test_resolve_precedence)
{
    const char *what = NULL;
    unsetenv("KS_GPU_MAP");
    ck_assert_str_eq(ks_gpu_map_resolve(NULL, &what), "local");
    ck_assert_str_eq(what, "GPU map");
    setenv("KS_GPU_MAP", "", 1); /* empty: as if unset */
    ck_assert_str_eq(ks_gpu_map_resolve(NULL, &what), "local");
    setenv("KS_GPU_MAP", "1,0", 1);
    ck_assert_str_eq(ks_gpu_map_resolve(NULL, &what), "1,0");
    ck_assert_str_eq(what, "KS_GPU_MAP");
    ck_assert_str_eq(ks_gpu_map_resolve("none", &what), "none"); /* a given map wins */
    ck_assert_str_eq(what, "GPU map");
    unsetenv("KS_GPU_MAP");
}
END_TEST

/* The real node: without CUDA (or a GPU) none; with G GPUs, "local" for
 * process k is GPU k mod G and making it current works. */
START_TEST(test_this_node)
{
    const int g = ks_gpu_count();
#ifndef KS_HAVE_CUDA
    ck_assert_int_eq(g, 0);
    ck_assert_int_eq(ks_gpu_use(0), KS_ERR_UNSUPPORTED);
#endif
    for (int local = 0; g > 0 && local < 2 * g; local++) {
        const int dev = pick("local", local, g);
        ck_assert_int_eq(dev, local % g);
        ck_assert_int_eq(ks_gpu_use(dev), KS_OK);
    }
    ks_gpu_desc d;
    ck_assert_int_eq(ks_backend_gpu(NULL, &d), KS_OK);
    ck_assert_int_eq(d.device, -1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("gpu_map");
    TCase *t = tcase_create("gpu_map");
    tcase_add_test(t, test_local);
    tcase_add_test(t, test_lists_and_index);
    tcase_add_test(t, test_none);
    tcase_add_test(t, test_bad_maps);
    tcase_add_test(t, test_resolve_precedence);
    tcase_add_test(t, test_this_node);
    suite_add_tcase(s, t);
    return ks_test_run(s);
}
