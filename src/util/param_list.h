/*
 * Every tunable of Baton, declared once: name (read from BATON_<NAME>, else NCCL_<NAME>),
 * default, and a one-line doc. `baton-perf --params` prints this table.
 *   BT_PARAM_INT(getter, NAME, default, doc)   -> int64_t bt_param_<getter>(void)
 *   BT_PARAM_STR(getter, NAME, default, doc)   -> const char *bt_param_str_<getter>(void)
 * No include guard: param.h and param.c expand it with different macro definitions.
 */

/* logging */
BT_PARAM_STR(debug, "DEBUG", NULL, "log level: VERSION, WARN, INFO or TRACE")
BT_PARAM_STR(debug_subsys, "DEBUG_SUBSYS", "INIT,ENV",
             "subsystems logged at INFO/TRACE: "
             "INIT,COLL,P2P,SHM,NET,PROXY,TUNING,BOOTSTRAP,ENV,ALLOC,ALL (^ negates)")

/* bootstrap and sockets */
BT_PARAM_STR(comm_id, "COMM_ID", NULL,
             "host:port of the rendezvous root, instead of passing an ncclUniqueId")
BT_PARAM_STR(socket_ifname, "SOCKET_IFNAME", NULL,
             "network interfaces to use: prefix list, ^ excludes, = exact match")
BT_PARAM_STR(socket_family, "SOCKET_FAMILY", NULL,
             "address family for bootstrap sockets: AF_INET or AF_INET6")
BT_PARAM_INT(
    timeout, "TIMEOUT", 600,
    "seconds any wait (bootstrap, flags, sockets) may last before it fails naming the peer")
BT_PARAM_INT(bootstrap_timeout, "BOOTSTRAP_TIMEOUT", 120,
             "seconds init waits for all ranks to reach the rendezvous")

/* the interface version ncclGetVersion reports (api/comm_api.c) */
BT_PARAM_STR(report_version, "REPORT_VERSION", NULL,
             "the NCCL version ncclGetVersion reports, X.Y.Z (unset: 2.30.7, the newest "
             "interface Baton implements whole): one whose device-API layouts Baton serves, "
             "2.28.x, 2.29.2-2.29.3, 2.29.5-2.29.7 or 2.30.0-2.30.7 (programs built against "
             "newer headers gate their device API on it)")

/* one-sided calls on GPU communicators (core/rma_gpu.c) */
BT_PARAM_INT(rma_gpu, "RMA_GPU", 1,
             "1: ncclPutSignal/ncclSignal/ncclWaitSignal on GPU communicators in stream order, "
             "their links made at a communicator's first GPU window registration "
             "(docs/DEVICE_API.md); 0: no links made, the calls refused, naming why")

/* communicator */
BT_PARAM_INT(comm_blocking, "COMM_BLOCKING", 1,
             "0: communicators whose config leaves `blocking` unset are non-blocking (init, "
             "split, shrink and group ends return ncclInProgress and finish in the background)")
BT_PARAM_STR(device, "DEVICE", NULL, "'cpu' makes every communicator a host-memory communicator")
BT_PARAM_INT(check_pointers, "CHECK_POINTERS", 0, "validate buffer pointers before each collective")
BT_PARAM_INT(set_thread_name, "SET_THREAD_NAME", 1,
             "name Baton's threads (baton Progress, baton Service, ...)")

/* transports */
BT_PARAM_INT(hang_report, "HANG_REPORT", 30,
             "seconds without progress after which a waiting collective prints what it waits "
             "for (collective, peer, stage) and which ranks have not arrived; 0: never")
BT_PARAM_INT(arrival_board, "ARRIVAL_BOARD", 1,
             "1: ranks on one host keep a shared-memory arrival board (which collective each "
             "has called, for hang reports and failure causes); 0: none, as across hosts (hang "
             "reports ask the other ranks in bootstrap messages)")
BT_PARAM_INT(check_coll, "CHECK_COLL", 0,
             "1: before each collective the ranks compare what they call (collective, count, "
             "dtype, op, root) and fail with the first mismatch named, instead of hanging or "
             "computing garbage (one bootstrap allgather per collective); rank 0's setting wins")
BT_PARAM_STR(topo_file, "TOPO_FILE", NULL,
             "read the machine's topology from this file instead of discovering it "
             "(format: src/topo/topo_file.c)")
BT_PARAM_STR(topo_dump_file, "TOPO_DUMP_FILE", NULL,
             "write the topology found (or read) to this file")
BT_PARAM_INT(topo_probe, "TOPO_PROBE", 0,
             "1: host-memory communicators of 3+ ranks measure each directed pair's throughput "
             "at init (4 MB send/recv per pair, best of 4 rounds) and build their rings from the "
             "measured matrix")
BT_PARAM_INT(ring_split, "RING_SPLIT", 1,
             "1: where a ring's links differ (TOPO_PROBE), ring AllReduce blocks are sized in "
             "proportion to the links; 0: equal blocks")
BT_PARAM_STR(inject_link_bw, "INJECT_LINK_BW", NULL,
             "testing: cap send rates of host-memory links, SRC>DST:MB/s entries (rank or *), "
             "comma-separated, later ones win; e.g. '*>*:2000,0>1:1000'")
BT_PARAM_STR(hostid, "HOSTID", NULL,
             "this process's host identity in place of the host name and boot id: processes "
             "with different ids are different hosts (no shared memory or P2P between them, "
             "the network instead), as NCCL_HOSTID")
BT_PARAM_INT(test_hosts, "TEST_HOSTS", 0,
             "testing only: N > 1 splits a communicator's ranks into N hosts of consecutive "
             "ranks (rank * N / nranks), ranks of one process included")
BT_PARAM_INT(test_same_gpu, "TEST_SAME_GPU", 0,
             "testing only: 1 lets ranks of one process share a GPU (their kernels must fit on "
             "it together; two ranks of up to 64 channels fit an H200); refused otherwise")
BT_PARAM_INT(cumem_enable, "CUMEM_ENABLE", 1,
             "1: ncclMemAlloc gives CUDA VMM memory (cuMemCreate, shareable as a file "
             "descriptor), which symmetric windows map into one range in NCCL's device API "
             "layout; 0: cudaMalloc (windows map peers through CUDA IPC, one by one)")
BT_PARAM_INT(p2p_disable, "P2P_DISABLE", 0,
             "1: GPU connectors in host shared memory (cudaHostRegister) instead of GPU memory "
             "mapped between GPUs")
BT_PARAM_STR(p2p_level, "P2P_LEVEL", NULL,
             "GPU connectors over P2P only when every pair of the communicator's GPUs is within "
             "this path class: LOC (never), NVL, PIX, PXB, PHB, NODE, SYS; else host shared "
             "memory (unset: wherever CUDA allows peer access)")
BT_PARAM_INT(cross_nic, "CROSS_NIC", 2,
             "with several network devices: 0 keeps each channel on one rail (channel c on "
             "device c mod n on every rank); 1 or 2 let a GPU rank use the device nearest its "
             "GPU")
BT_PARAM_INT(shm_disable, "SHM_DISABLE", 0, "disable the shared-memory transport")
BT_PARAM_INT(net_disable, "NET_DISABLE", 0,
             "disable the network transport (sockets through the CPU proxy)")
BT_PARAM_STR(net, "NET", NULL,
             "the network to use, by its name (Socket, OFI, or an external plugin's, e.g. IB "
             "or Libfabric; case does not matter): that one or an error (unset: the first "
             "that finds a device; the config's netName wins)")
BT_PARAM_STR(net_plugin, "NET_PLUGIN", NULL,
             "external network plugins, tried first: a comma list of names (libnccl-net-NAME.so) "
             "or paths; none: no plugin (unset: libnccl-net.so if the loader finds it)")
BT_PARAM_STR(shm_dir, "SHM_DIR", "/dev/shm", "directory where shared-memory segments are created")

/* channels, buffers, protocols, algorithms */
BT_PARAM_INT(min_nchannels, "MIN_NCHANNELS", 1, "minimum number of channels")
BT_PARAM_INT(max_nchannels, "MAX_NCHANNELS", 0,
             "maximum number of channels; 0: 2 on host memory, 32 on GPUs")
BT_PARAM_INT(buffsize, "BUFFSIZE", 1 << 20,
             "bytes of Simple-protocol buffer per connector (NSTEPS slots)")
BT_PARAM_INT(net_buffsize, "NET_BUFFSIZE", 1 << 22,
             "bytes of Simple-protocol buffer per connector (NSTEPS slots) in communicators "
             "with a network path: fewer, larger messages per socket")
BT_PARAM_INT(ll_buffsize, "LL_BUFFSIZE", 1 << 17,
             "bytes of LL-protocol buffer per connector (NSTEPS slots)")
BT_PARAM_INT(ll128_buffsize, "LL128_BUFFSIZE", 1 << 22,
             "bytes of LL128-protocol buffer per GPU ring connector (NSTEPS slots of 128-byte "
             "lines); unset: 64 MB over the rank's ring channels, 1-4 MB each")
BT_PARAM_INT(p2p_chunksize, "P2P_CHUNKSIZE", 1 << 17, "bytes of each slot of send/recv connectors")
BT_PARAM_STR(proto, "PROTO", NULL, "protocols allowed: LL, LL128, Simple (^ excludes)")
BT_PARAM_STR(algo, "ALGO", NULL,
             "algorithms allowed for AllReduce: Ring, Tree, Direct (^ excludes)")
BT_PARAM_INT(ll_threshold, "LL_THRESHOLD", -1,
             "bytes per rank below which LL is used (-1: the tuner decides)")
BT_PARAM_INT(ll128_threshold, "LL128_THRESHOLD", -1,
             "GPU one-shot AllReduce bytes up to which LL128 is used above LL (-1: the tuner "
             "decides; needs NVLink between every pair of GPUs)")
BT_PARAM_INT(direct_threshold, "DIRECT_THRESHOLD", -1,
             "AllReduce bytes up to which the one-shot (Direct) algorithm is used on one host (-1: "
             "the tuner decides)")
BT_PARAM_INT(tree_threshold, "TREE_THRESHOLD", -1,
             "AllReduce bytes below which Tree is used (-1: the tuner decides)")
BT_PARAM_INT(win_min_bytes, "WIN_MIN_BYTES", -1,
             "GPU AllReduce with its input in a symmetric window (ncclCommWindowRegister): "
             "bytes from which the window kernel reads the peers' inputs directly (-1: the "
             "tuner's default)")
BT_PARAM_INT(win_max_bytes, "WIN_MAX_BYTES", -1,
             "... and up to which (-1: the tuner's default; 0: never)")

/* waiting */
BT_PARAM_INT(spin_count, "SPIN_COUNT", 2000,
             "polls of a flag before a waiting thread yields its core")
BT_PARAM_INT(yield_count, "YIELD_COUNT", 200,
             "sched_yield calls before a waiting thread starts to sleep")
BT_PARAM_INT(host_threads, "HOST_THREADS", 0,
             "threads that drive a host-memory launch's lanes (channels, send/recv peers): "
             "the launching thread and helpers (0: one per CPU each local rank has to "
             "itself, at most 4; 1: the launching thread alone; max 8)")
BT_PARAM_INT(host_threads_min_bytes, "HOST_THREADS_MIN_BYTES", 1048576,
             "bytes a host-memory launch moves from which helper threads join it")

/* network (socket backend) */
BT_PARAM_INT(
    socket_nthreads, "SOCKET_NTHREADS", 0,
    "helper threads per socket-backend connection (0: the proxy drives the sockets; max 16)")
BT_PARAM_INT(nsocks_perthread, "NSOCKS_PERTHREAD", 1,
             "TCP sockets per helper thread (or in all when SOCKET_NTHREADS=0); max 64 in all")
BT_PARAM_INT(socket_delay_us, "SOCKET_DELAY_US", 0,
             "fault injection: delay the completion of each large socket send/recv by N us")
BT_PARAM_INT(socket_delay_min_bytes, "SOCKET_DELAY_MIN_BYTES", 65536,
             "fault injection: SOCKET_DELAY_US applies to messages of at least this many bytes")
BT_PARAM_INT(socket_fail_after_bytes, "SOCKET_FAIL_AFTER_BYTES", 0,
             "fault injection: shut a socket connection down after it sent K bytes (0: never)")
/* network (libfabric backend, net/ofi/ofi.c): which provider; without it (or
 * FI_PROVIDER) OFI has devices only when libfabric's first provider drives a NIC */
BT_PARAM_STR(
    ofi_provider, "OFI_PROVIDER", NULL,
    "libfabric provider for the OFI network backend, e.g. 'tcp;ofi_rxm' or 'verbs;ofi_rxm' "
    "(unset, and FI_PROVIDER unset: only a hardware provider is used)")
/* endpoints per OFI send comm: the socket backend's NSOCKS_PERTHREAD analogue */
BT_PARAM_INT(ofi_neps, "OFI_NEPS", 1,
             "libfabric endpoints per OFI connection (1..16); messages of 64 KB or more are cut "
             "into one piece per endpoint")

/* proxy */
BT_PARAM_INT(progress_appendop_freq, "PROGRESS_APPENDOP_FREQ", 8,
             "rounds of the proxy progress loop between fetches of newly posted ops while ops "
             "are active")
BT_PARAM_INT(
    proxy_linger_us, "PROXY_LINGER_US", 200,
    "microseconds the idle proxy keeps looking for the next op (yielding) before it sleeps")
BT_PARAM_INT(socket_buffsize, "SOCKET_BUFFSIZE", 0,
             "SO_SNDBUF and SO_RCVBUF of each NET socket in bytes (capped by the kernel's "
             "wmem_max/rmem_max); 0: the kernel's autotuning")
BT_PARAM_INT(gdr_enable, "GDR_ENABLE", 0,
             "1: let NET_GDR_LEVEL turn GPUDirect RDMA on (experimental: it has not run on an "
             "RDMA NIC yet, docs/NETWORK.md); 0: GPU communicators' network FIFOs stay in host "
             "memory whatever NET_GDR_LEVEL says")
BT_PARAM_STR(net_gdr_level, "NET_GDR_LEVEL", "LOC",
             "GPUDirect RDMA: GPU communicators' network FIFOs in GPU memory, for a network "
             "device that can register GPU memory (NCCL_PTR_CUDA or NCCL_PTR_DMABUF), where the "
             "GPU and the NIC are no further apart "
             "than this path class (PIX, PXB, PHB, NODE, SYS; SYS also where the topology does "
             "not place them); LOC: never (the default until GPUDirect RDMA has run on an RDMA "
             "NIC: docs/NETWORK.md)")
BT_PARAM_INT(launch_event, "LAUNCH_EVENT", 1,
             "GPU kernels on sm_90 and later record the communicator's stream-order event "
             "themselves (a programmatic event of the launch); 0: a cudaEventRecord after each "
             "launch, as on older GPUs and in CUDA graph captures (to compare the two)")
BT_PARAM_INT(gpu_trees, "GPU_TREES", 0,
             "1: GPU communicators whose ranks are on several hosts may run AllReduce on trees "
             "over hosts (a chain per host, binary trees between hosts) where the tuner's model "
             "prefers them (experimental; up to 6 more network FIFOs on half the channels); 0: "
             "rings")
BT_PARAM_INT(dmabuf_enable, "DMABUF_ENABLE", 1,
             "GPUDirect RDMA: register GPU FIFOs by dma-buf (regMrDmaBuf) where the network "
             "device reports NCCL_PTR_DMABUF and the GPU and driver give a dma-buf (1), else as "
             "NCCL_PTR_CUDA; 0: NCCL_PTR_CUDA only")
BT_PARAM_INT(net_gdr_read, "NET_GDR_READ", 1,
             "with NET_GDR_LEVEL: 1: the sending side's FIFO in GPU memory too (the NIC reads "
             "it); 0: the receiving side's only")
BT_PARAM_INT(net_force_flush, "NET_FORCE_FLUSH", -1,
             "GPUDirect RDMA: flush (iflush) every network receive into GPU memory before the "
             "kernel reads it (-1, the default, and 1), or only where the device asks "
             "(forceFlush: 0)")
BT_PARAM_INT(net_zero_copy, "NET_ZERO_COPY", -1,
             "NET connectors send steps that only forward the user's input from it and land "
             "steps that only write the output in it (when input and output do not overlap), "
             "registering those buffers once (cached per connector): 1 on, 0 off (copy through "
             "the registered FIFO), -1 on for backends whose registrations pin nothing "
             "(Socket, OFI's software providers), off for the others")
BT_PARAM_INT(proxy_drive, "PROXY_DRIVE", 1,
             "1: the thread that launches a collective runs its NET progress itself while it "
             "waits (the progress thread sleeps meanwhile); 0: only the progress thread does")
BT_PARAM_INT(proxy_dump_signal, "PROXY_DUMP_SIGNAL", 0,
             "signal number (e.g. 10 = SIGUSR1) that makes every proxy print its active ops to "
             "stderr; 0: off")
