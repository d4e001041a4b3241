/*
 * External network plugins, found as NCCL 2.28 finds them. NCCL_NET_PLUGIN:
 *   unset     libnccl-net.so, if the dynamic loader finds one (silently absent otherwise)
 *   none      no plugin
 *   a list    comma-separated; each entry is tried as given (a path, or a file name the
 *             loader searches), and a bare name also as libnccl-net-<name>.so
 * Each library must export ncclNetPlugin_v11, or an older table down to ncclNetPlugin_v6
 * (the newest wins), which net/shim.c adapts to v11. Libraries are loaded once per process,
 * on the first communicator that needs a network, and stay loaded.
 *
 * A library named explicitly that is missing, fails to load, or exports no table is one
 * WARN; net/open.c then goes on to the next network.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "net/net.h"
#include "util/param.h"

#define MAX_PLUGINS 8

static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct bt_net_plugin plugins[MAX_PLUGINS];
static int nplugins;

/* The newest table `h` exports, adapted to v11; 0 when it has none Baton loads. */
static int find_table(void *h, const char *lib, struct bt_net_plugin *p)
{
    for (int v = 11; v >= 6; v--) {
        char sym[32];
        snprintf(sym, sizeof(sym), "ncclNetPlugin_v%d", v);
        void *t = dlsym(h, sym);
        if (!t)
            continue;
        const ncclNet_v11_t *v11 = v == 11 ? t : bt_net_shim(t, v);
        if (!v11) /* said why */
            return 0;
        snprintf(p->lib, sizeof(p->lib), "%s", lib);
        p->be.v11 = v11;
        p->version = v;
        const struct bt_net_ext *ext = dlsym(h, BT_NET_PLUGIN_EXT);
        if (ext) {
            p->be.ext = *ext;
            BT_INFO(BT_LOG_NET | BT_LOG_INIT, "NET/Plugin: %s: Baton's extensions (%s)", lib,
                    BT_NET_PLUGIN_EXT);
        }
        BT_INFO(BT_LOG_NET | BT_LOG_INIT, "NET/Plugin: %s: table %s (%s)", lib, sym,
                v11->name ? v11->name : "?");
        return 1;
    }
    BT_WARN("NET/Plugin: %s exports no ncclNetPlugin_v11..v6 table; not used", lib);
    return 0;
}

static void load_one(const char *entry, int quiet_if_missing)
{
    if (nplugins == MAX_PLUGINS) {
        BT_WARN("NET/Plugin: more than %d plugins in NCCL_NET_PLUGIN; %s ignored", MAX_PLUGINS,
                entry);
        return;
    }
    char alt[256] = "", err1[256] = "";
    void *h = dlopen(entry, RTLD_NOW | RTLD_LOCAL);
    const char *lib = entry;
    if (!h) {
        snprintf(err1, sizeof(err1), "%s", dlerror());
        size_t len = strlen(entry);
        /* a bare name (not a path, not already a file name): libnccl-net-<name>.so */
        if (!strchr(entry, '/') && !(len > 3 && strcmp(entry + len - 3, ".so") == 0)) {
            snprintf(alt, sizeof(alt), "libnccl-net-%s.so", entry);
            h = dlopen(alt, RTLD_NOW | RTLD_LOCAL);
            lib = alt;
        }
    }
    if (!h) {
        if (quiet_if_missing)
            BT_INFO(BT_LOG_NET | BT_LOG_INIT, "NET/Plugin: no %s (%s); built-in networks only",
                    entry, err1);
        else
            BT_WARN("NET/Plugin: NCCL_NET_PLUGIN names '%s', which does not load (%s%s%s); "
                    "using the next network",
                    entry, err1, alt[0] ? "; nor " : "", alt[0] ? alt : "");
        return;
    }
    if (find_table(h, lib, &plugins[nplugins]))
        nplugins++;
    else
        dlclose(h);
}

static void load_all(void)
{
    const char *env = bt_param_str_net_plugin();
    if (!env) {
        load_one("libnccl-net.so", 1);
        return;
    }
    if (strcasecmp(env, "none") == 0) {
        BT_INFO(BT_LOG_NET | BT_LOG_INIT, "NET/Plugin: NCCL_NET_PLUGIN=none");
        return;
    }
    char list[1024];
    snprintf(list, sizeof(list), "%s", env);
    char *save = NULL;
    for (char *e = strtok_r(list, ",", &save); e; e = strtok_r(NULL, ",", &save)) {
        while (*e == ' ')
            e++;
        if (*e)
            load_one(e, 0);
    }
}

int bt_net_plugins(const struct bt_net_plugin **plugins_p)
{
    pthread_once(&once, load_all);
    *plugins_p = plugins;
    return nplugins;
}
