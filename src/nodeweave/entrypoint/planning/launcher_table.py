"""Every option each launcher's own parser takes, so the spec can refuse one the launcher would not know.

Stdlib data, no launcher imported: the spec is read where torch is not installed. ``launcher.options`` are
checked against it at ``nodeweave validate`` rather than failing at launch on every node. The table is the
parsers' own (argparse ``option_strings``) of the releases named below; tests/test_launcher_options.py
compares it with the installed parsers, so a launcher release that adds or drops an option fails there.
"""

# The releases the table was read from (pyproject's launchers extra; a newer one is compared by the test).
READ_FROM = {"torchrun": "torch 2.13.0", "deepspeed": "deepspeed 0.19.8", "accelerate": "accelerate 1.15.0"}

OPTIONS = {
    "torchrun": frozenset("""
        --duplicate-stderr-filters --duplicate-stdout-filters --duplicate_stderr_filters --duplicate_stdout_filters
        --event-log-handler --event_log_handler --help --local-addr --local-ranks-filter --local_addr
        --local_ranks_filter --log-dir --log_dir --logs-specs --logs_specs --master-addr --master-port --master_addr
        --master_port --max-restarts --max_restarts --module --monitor-interval --monitor_interval --nnodes
        --no-python --no_python --node-rank --node_rank --nproc-per-node --nproc_per_node --numa-binding
        --numa_binding --rdzv-backend --rdzv-conf --rdzv-endpoint --rdzv-id --rdzv_backend --rdzv_conf
        --rdzv_endpoint --rdzv_id --redirects --role --run-path --run_path --shutdown-timeout --shutdown_timeout
        --signals-to-handle --signals_to_handle --standalone --start-method --start_method --tee
        --virtual-local-rank --virtual_local_rank -h -m -r -t
    """.split()),
    "deepspeed": frozenset("""
        --autotuning --bind_core_list --bind_cores_to_rank --enable_each_rank_log --exclude --force_multi --help
        --hostfile --include --launcher --launcher_args --log_level --master_addr --master_port --module
        --no_local_rank --no_python --no_ssh --no_ssh_check --node_rank --num_accelerators --num_gpus --num_nodes
        --quiet --save_pid --ssh_port --venv_script -H -e -h -i -q
    """.split()),
    "accelerate": frozenset("""
        --aws-access-key-id --aws-secret-access-key --aws_access_key_id --aws_secret_access_key --config-file
        --config_file --cpu --debug --deepspeed-config-file --deepspeed-exclusion-filter --deepspeed-hostfile
        --deepspeed-inclusion-filter --deepspeed-moe-layer-cls-names --deepspeed-multinode-launcher
        --deepspeed_config_file --deepspeed_exclusion_filter --deepspeed_hostfile --deepspeed_inclusion_filter
        --deepspeed_moe_layer_cls_names --deepspeed_multinode_launcher --downcast-bf16 --downcast_bf16
        --dynamo-backend --dynamo-mode --dynamo-use-dynamic --dynamo-use-fullgraph --dynamo-use-regional-compilation
        --dynamo_backend --dynamo_mode --dynamo_use_dynamic --dynamo_use_fullgraph --dynamo_use_regional_compilation
        --enable-cpu-affinity --enable_cpu_affinity --env --fp8-amax-compute-algo --fp8-amax-history-len
        --fp8-backend --fp8-enable-fsdp-float8-all-gather --fp8-format --fp8-interval --fp8-margin --fp8-opt-level
        --fp8-override-linear-precision --fp8-pad-inner-dim --fp8-use-autocast-during-eval --fp8_amax_compute_algo
        --fp8_amax_history_len --fp8_backend --fp8_enable_fsdp_float8_all_gather --fp8_format --fp8_interval
        --fp8_margin --fp8_opt_level --fp8_override_linear_precision --fp8_pad_inner_dim
        --fp8_use_autocast_during_eval --fsdp-activation-checkpointing --fsdp-activation-checkpointing-offload
        --fsdp-auto-wrap-policy --fsdp-backward-prefetch --fsdp-cpu-ram-efficient-loading --fsdp-forward-prefetch
        --fsdp-min-num-params --fsdp-offload-params --fsdp-reshard-after-forward --fsdp-sharding-strategy
        --fsdp-state-dict-type --fsdp-sync-module-states --fsdp-transformer-layer-cls-to-wrap --fsdp-use-orig-params
        --fsdp-version --fsdp_activation_checkpointing --fsdp_activation_checkpointing_offload
        --fsdp_auto_wrap_policy --fsdp_backward_prefetch --fsdp_cpu_ram_efficient_loading --fsdp_forward_prefetch
        --fsdp_min_num_params --fsdp_offload_params --fsdp_reshard_after_forward --fsdp_sharding_strategy
        --fsdp_state_dict_type --fsdp_sync_module_states --fsdp_transformer_layer_cls_to_wrap --fsdp_use_orig_params
        --fsdp_version --gpu-ids --gpu_ids --gradient-accumulation-steps --gradient-clipping
        --gradient_accumulation_steps --gradient_clipping --help --log-dir --log_dir --machine-rank --machine_rank
        --main-process-ip --main-process-port --main-training-function --main_process_ip --main_process_port
        --main_training_function --max-restarts --max_restarts --megatron-lm-attention-backend
        --megatron-lm-attention-dropout --megatron-lm-attention-softmax-in-fp32
        --megatron-lm-calculate-per-token-loss --megatron-lm-context-parallel-size
        --megatron-lm-decoder-last-pipeline-num-layers --megatron-lm-eod-mask-loss
        --megatron-lm-expert-model-parallel-size --megatron-lm-expert-tensor-parallel-size
        --megatron-lm-gradient-clipping --megatron-lm-hidden-dropout --megatron-lm-no-load-optim
        --megatron-lm-no-save-optim --megatron-lm-num-micro-batches --megatron-lm-optimizer-cpu-offload
        --megatron-lm-overlap-cpu-optimizer-d2h-h2d --megatron-lm-pp-degree --megatron-lm-recompute-activations
        --megatron-lm-recompute-granularity --megatron-lm-recompute-method --megatron-lm-recompute-num-layers
        --megatron-lm-sequence-parallelism --megatron-lm-tp-degree --megatron-lm-use-custom-fsdp
        --megatron-lm-use-distributed-optimizer --megatron-lm-use-precision-aware-optimizer
        --megatron-lm-use-rotary-position-embeddings --megatron_lm_attention_backend --megatron_lm_attention_dropout
        --megatron_lm_attention_softmax_in_fp32 --megatron_lm_calculate_per_token_loss
        --megatron_lm_context_parallel_size --megatron_lm_decoder_last_pipeline_num_layers
        --megatron_lm_eod_mask_loss --megatron_lm_expert_model_parallel_size
        --megatron_lm_expert_tensor_parallel_size --megatron_lm_gradient_clipping --megatron_lm_hidden_dropout
        --megatron_lm_no_load_optim --megatron_lm_no_save_optim --megatron_lm_num_micro_batches
        --megatron_lm_optimizer_cpu_offload --megatron_lm_overlap_cpu_optimizer_d2h_h2d --megatron_lm_pp_degree
        --megatron_lm_recompute_activations --megatron_lm_recompute_granularity --megatron_lm_recompute_method
        --megatron_lm_recompute_num_layers --megatron_lm_sequence_parallelism --megatron_lm_tp_degree
        --megatron_lm_use_custom_fsdp --megatron_lm_use_distributed_optimizer
        --megatron_lm_use_precision_aware_optimizer --megatron_lm_use_rotary_position_embeddings --mixed-precision
        --mixed_precision --module --monitor-interval --monitor_interval --mpirun-hostfile --mpirun_hostfile
        --multi-gpu --multi_gpu --no-python --no-tpu-cluster --no_python --no_tpu_cluster
        --num-cpu-threads-per-process --num-machines --num-processes --num_cpu_threads_per_process --num_machines
        --num_processes --offload-optimizer-device --offload-optimizer-nvme-path --offload-param-device
        --offload-param-nvme-path --offload_optimizer_device --offload_optimizer_nvme_path --offload_param_device
        --offload_param_nvme_path --parallelism-config-cp-backend --parallelism-config-cp-comm-strategy
        --parallelism-config-cp-size --parallelism-config-dp-replicate-size --parallelism-config-dp-shard-size
        --parallelism-config-sp-attn-implementation --parallelism-config-sp-backend
        --parallelism-config-sp-seq-length --parallelism-config-sp-seq-length-is-variable
        --parallelism-config-sp-size --parallelism-config-tp-size --parallelism_config_cp_backend
        --parallelism_config_cp_comm_strategy --parallelism_config_cp_size --parallelism_config_dp_replicate_size
        --parallelism_config_dp_shard_size --parallelism_config_sp_attn_implementation
        --parallelism_config_sp_backend --parallelism_config_sp_seq_length
        --parallelism_config_sp_seq_length_is_variable --parallelism_config_sp_size --parallelism_config_tp_size
        --quiet --rdzv-backend --rdzv-conf --rdzv_backend --rdzv_conf --role --same-network --same_network --tee
        --tpu --tpu-cluster --tpu-use-sudo --tpu_cluster --tpu_use_sudo --use-deepspeed --use-fsdp --use-megatron-lm
        --use-parallelism-config --use_deepspeed --use_fsdp --use_megatron_lm --use_parallelism_config --vm
        --zero-stage --zero3-init-flag --zero3-save-16bit-model --zero3_init_flag --zero3_save_16bit_model
        --zero_stage -h -m -q -t
    """.split()),
}
