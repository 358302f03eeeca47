/* The network devices the transport gives UCX (gpucoll_ucx_config_t.net_devices,
 * coll_gpu_ucx_net_devices): applied where UCX's configuration leaves the
 * choice at "all", never over a UCX_NET_DEVICES the user set, and named in
 * the group's description. One process, a group of one; no MPI. */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "gpucoll_ucx.h"

namespace {

int failures = 0;

void expect(bool ok, const char *what, const std::string &detail)
{
    if (!ok) {
        ++failures;
        fprintf(stderr, "FAIL: %s: %s\n", what, detail.c_str());
    }
}

int self_allgather(const void *in, void *out, size_t bytes, void *)
{
    memcpy(out, in, bytes);
    return 0;
}

/* The description of a group of one made with `net_devices`, or "" if it
 * could not be made. The process's UCP context lives as long as the group. */
std::string describe_group(const char *net_devices)
{
    gpucoll_ucx_config_t cfg;
    gpucoll_ucx_config_init(&cfg, nullptr);
    cfg.net_devices = net_devices;
    gpucoll_oob_t oob = {0, 1, self_allgather, nullptr, nullptr, 0};
    gpucoll_ucx_group_t *g = nullptr;
    if (gpucoll_ucx_group_create(&cfg, &oob, &g) != GPUCOLL_SUCCESS) {
        fprintf(stderr, "group_create(%s): %s\n", net_devices ? net_devices : "NULL", gpucoll_last_error());
        return "";
    }
    char text[1024];
    gpucoll_ucx_describe(g, text, sizeof text);
    gpucoll_ucx_group_destroy(g);
    return text;
}

} // namespace

int main()
{
    unsetenv("UCX_NET_DEVICES");
    std::string d = describe_group(nullptr);
    expect(d.find("network devices all, UCX's configuration") != std::string::npos, "none given", d);
    d = describe_group("lo");
    expect(d.find("network devices lo, the NIC nearest the GPU") != std::string::npos, "ours applied", d);
    setenv("UCX_NET_DEVICES", "lo", 1);
    d = describe_group("mlx5_7:1");
    expect(d.find("network devices lo, UCX's configuration") != std::string::npos, "the user's kept", d);
    unsetenv("UCX_NET_DEVICES");
    if (failures) {
        printf("FAIL ucx net devices: %d failed checks\n", failures);
        return 1;
    }
    printf("PASS ucx net devices\n");
    return 0;
}
