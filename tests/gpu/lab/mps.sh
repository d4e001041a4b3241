# CUDA MPS on the GPU machine, sourced by session.sh (MPS=1) and run.sh's mps and hosts modes:
# mps_start starts the control daemon (as root) with its pipes under $OUT, so that every CUDA
# process started after it is an MPS client and kernels of several processes run on GPU 0 at
# once (MPS_STARTED=1 when this call started it); mps_stop quits it (the session must leave the machine as it found it).
mps_start() {
    export CUDA_MPS_PIPE_DIRECTORY=${CUDA_MPS_PIPE_DIRECTORY:-/tmp/baton-mps/pipe}
    export CUDA_MPS_LOG_DIRECTORY=${CUDA_MPS_LOG_DIRECTORY:-/tmp/baton-mps/log}
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    if echo get_server_list | nvidia-cuda-mps-control >/dev/null 2>&1; then
        echo "mps: a control daemon already runs ($CUDA_MPS_PIPE_DIRECTORY)"
        return 0
    fi
    nvidia-cuda-mps-control -d || { echo "mps: nvidia-cuda-mps-control -d failed"; return 1; }
    MPS_STARTED=1
    echo "mps: started ($CUDA_MPS_PIPE_DIRECTORY)"
}

mps_stop() {
    MPS_STARTED=0
    echo quit | nvidia-cuda-mps-control >/dev/null 2>&1 && echo "mps: stopped"
    return 0
}
