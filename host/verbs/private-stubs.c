/* IBVERBS_PRIVATE_34 stubs for Cnuas's replacement libibverbs.so.1.
 *
 * IBVERBS_PRIVATE_34 is the interface between rdma-core's libibverbs and its provider drivers
 * (the code that talks to a real adapter). Debian's perftest binaries carry DT_NEEDED entries for
 * the real libmlx5.so.1 and libefa.so.1, which import 61 and 21 of these symbols, and every Debian
 * RDMA binary and library is linked with BIND_NOW: the dynamic loader resolves every import when
 * the object is loaded and refuses to start the program if one is missing. So the replacement
 * library must define them all, although nothing in a Cnuas process ever calls them: the only
 * route to them is a registered provider driver, and Cnuas's verbs_register_driver_34 (which, like
 * ibv_query_gid_type, is implemented elsewhere in host/verbs/) never registers one, so the library
 * never hands a provider a device or a context.
 *
 * Each function here fails the way the rdma-core 44 function does (libibverbs/driver.h and the
 * cmd*.c files that implement it), with errno set to EOPNOTSUPP: ibv_cmd_* and execute_ioctl
 * return a positive errno value; ibv_cmd_poll_cq and ibv_read_ibdev_sysfs_file return -1;
 * pointer-returning ones return NULL; void ones do nothing.
 *
 * The rdma-core internal headers are not installed, so the prototypes are written here: pointers
 * to structs this file never dereferences are left incomplete, and enum parameters passed by value
 * are declared int (same size and calling convention on every Linux ABI rdma-core supports).
 * Compiles on its own: gcc -std=gnu11 -Wall -Wextra -fPIC -c private-stubs.c */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Exported whatever -fvisibility the library is built with; the version script
 * (libibverbs.map) places each name in IBVERBS_PRIVATE_34. */
#define CNUAS_EXPORT __attribute__((visibility("default")))

/* Stubs ignore their arguments by definition. */
#pragma GCC diagnostic ignored "-Wunused-parameter"

struct ib_uverbs_alloc_mw_resp;
struct ib_uverbs_alloc_pd_resp;
struct ib_uverbs_create_ah_resp;
struct ib_uverbs_create_cq_resp;
struct ib_uverbs_create_qp_resp;
struct ib_uverbs_create_srq_resp;
struct ib_uverbs_ex_create_cq_resp;
struct ib_uverbs_ex_create_qp_resp;
struct ib_uverbs_ex_create_rwq_ind_table_resp;
struct ib_uverbs_ex_create_wq_resp;
struct ib_uverbs_ex_modify_qp_resp;
struct ib_uverbs_ex_query_device_resp;
struct ib_uverbs_get_context_resp;
struct ib_uverbs_open_xrcd_resp;
struct ib_uverbs_reg_mr_resp;
struct ib_uverbs_rereg_mr_resp;
struct ib_uverbs_resize_cq_resp;
struct ibv_ah;
struct ibv_ah_attr;
struct ibv_alloc_dm_attr;
struct ibv_alloc_mw;
struct ibv_alloc_pd;
struct ibv_command_buffer;
struct ibv_comp_channel;
struct ibv_context;
struct ibv_counters_init_attr;
struct ibv_cq;
struct ibv_cq_init_attr_ex;
struct ibv_create_cq;
struct ibv_create_cq_ex;
struct ibv_create_qp;
struct ibv_create_qp_ex;
struct ibv_create_srq;
struct ibv_create_wq;
struct ibv_create_xsrq;
struct ibv_device;
struct ibv_device_attr_ex;
struct ibv_flow;
struct ibv_flow_action_esp_attr;
struct ibv_flow_attr;
struct ibv_get_context;
struct ibv_modify_cq;
struct ibv_modify_cq_attr;
struct ibv_modify_qp;
struct ibv_modify_qp_ex;
struct ibv_modify_srq;
struct ibv_modify_wq;
struct ibv_mw;
struct ibv_open_qp;
struct ibv_open_xrcd;
struct ibv_pd;
struct ibv_port_attr;
struct ibv_qp;
struct ibv_qp_attr;
struct ibv_qp_init_attr;
struct ibv_qp_init_attr_ex;
struct ibv_qp_open_attr;
struct ibv_query_device_ex_input;
struct ibv_query_port;
struct ibv_query_qp;
struct ibv_query_srq;
struct ibv_recv_wr;
struct ibv_reg_mr;
struct ibv_rereg_mr;
struct ibv_resize_cq;
struct ibv_rwq_ind_table;
struct ibv_rwq_ind_table_init_attr;
struct ibv_send_wr;
struct ibv_sge;
struct ibv_srq;
struct ibv_srq_attr;
struct ibv_srq_init_attr;
struct ibv_srq_init_attr_ex;
struct ibv_wc;
struct ibv_wq;
struct ibv_wq_attr;
struct ibv_wq_init_attr;
struct ibv_xrcd_init_attr;
struct verbs_context;
struct verbs_context_ops;
struct verbs_counters;
struct verbs_cq;
struct verbs_dm;
struct verbs_flow_action;
struct verbs_mr;
struct verbs_qp;
struct verbs_srq;
struct verbs_sysfs_dev;
struct verbs_xrcd;
union ibv_gid;

/* The ibv_cmd_* convention: errno set, the error returned as a positive value. */
static int cmd_unsupported(void)
{
	errno = EOPNOTSUPP;
	return EOPNOTSUPP;
}

/* ---- Provider plumbing: the calls a provider makes from its alloc_context / alloc_device
 * callbacks and its logging. Providers reach them only from inside a context the core library
 * asked them to create, which a library with no registered provider never does. */

CNUAS_EXPORT bool verbs_allow_disassociate_destroy = false;

CNUAS_EXPORT void __verbs_log(struct verbs_context *ctx, uint32_t level, const char *fmt, ...)
{
}

CNUAS_EXPORT void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd,
						 size_t alloc_size,
						 struct verbs_context *context_offset,
						 uint32_t driver_id)
{
	errno = EOPNOTSUPP;
	return NULL;
}

CNUAS_EXPORT struct ibv_context *verbs_open_device(struct ibv_device *device, void *private_data)
{
	errno = EOPNOTSUPP;
	return NULL;
}

CNUAS_EXPORT void verbs_set_ops(struct verbs_context *vctx, const struct verbs_context_ops *ops)
{
}

CNUAS_EXPORT void verbs_uninit_context(struct verbs_context *context)
{
}

CNUAS_EXPORT void verbs_init_cq(struct ibv_cq *cq, struct ibv_context *context,
				struct ibv_comp_channel *channel, void *cq_context)
{
}

CNUAS_EXPORT int ibv_read_ibdev_sysfs_file(char *buf, size_t size,
					   struct verbs_sysfs_dev *sysfs_dev,
					   const char *fnfmt, ...)
{
	errno = EOPNOTSUPP;
	return -1;
}

/* ---- The uverbs ioctl marshaller: providers build command buffers and send them to the kernel's
 * /dev/infiniband/uverbsN through these. There is no kernel device behind a Cnuas context. */

CNUAS_EXPORT int execute_ioctl(struct ibv_context *context, struct ibv_command_buffer *cmd)
{
	return cmd_unsupported();
}

/* Sizes a command buffer on the caller's stack (counting attributes in linked buffers); it has no
 * failure value. Returning the caller's own count is safe because execute_ioctl above never
 * copies the linked attributes into the buffer. errno is left alone: it is not an error. */
CNUAS_EXPORT unsigned int __ioctl_final_num_attrs(unsigned int num_attrs,
						  struct ibv_command_buffer *link)
{
	return num_attrs;
}

/* ---- Device and context commands: a provider issues them on the cmd_fd of the context it is
 * creating, and Cnuas never asks a provider to create a context. */

CNUAS_EXPORT int ibv_cmd_get_context(struct verbs_context *context, struct ibv_get_context *cmd,
				     size_t cmd_size, struct ib_uverbs_get_context_resp *resp,
				     size_t resp_size)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_query_context(struct ibv_context *ctx, struct ibv_command_buffer *driver)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_query_device_any(struct ibv_context *context,
					  const struct ibv_query_device_ex_input *input,
					  struct ibv_device_attr_ex *attr, size_t attr_size,
					  struct ib_uverbs_ex_query_device_resp *resp,
					  size_t *resp_size)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_query_port(struct ibv_context *context, uint8_t port_num,
				    struct ibv_port_attr *port_attr, struct ibv_query_port *cmd,
				    size_t cmd_size)
{
	return cmd_unsupported();
}

/* ---- Protection domain and XRC domain commands: the provider's alloc_pd / open_xrcd ops, reached
 * only through a provider-created context. */

CNUAS_EXPORT int ibv_cmd_alloc_pd(struct ibv_context *context, struct ibv_pd *pd,
				  struct ibv_alloc_pd *cmd, size_t cmd_size,
				  struct ib_uverbs_alloc_pd_resp *resp, size_t resp_size)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_dealloc_pd(struct ibv_pd *pd)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_open_xrcd(struct ibv_context *context, struct verbs_xrcd *xrcd,
				   int vxrcd_size, struct ibv_xrcd_init_attr *attr,
				   struct ibv_open_xrcd *cmd, size_t cmd_size,
				   struct ib_uverbs_open_xrcd_resp *resp, size_t resp_size)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_close_xrcd(struct verbs_xrcd *xrcd)
{
	return cmd_unsupported();
}

/* ---- Memory commands (memory regions, memory windows, device memory): the provider's reg_mr,
 * alloc_mw and alloc_dm ops, reached only through a provider-created context. */

CNUAS_EXPORT int ibv_cmd_reg_mr(struct ibv_pd *pd, void *addr, size_t length, uint64_t hca_va,
				int access, struct verbs_mr *vmr, struct ibv_reg_mr *cmd,
				size_t cmd_size, struct ib_uverbs_reg_mr_resp *resp,
				size_t resp_size)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_rereg_mr(struct verbs_mr *vmr, uint32_t flags, void *addr,
				  size_t length, uint64_t hca_va, int access, struct ibv_pd *pd,
				  struct ibv_rereg_mr *cmd, size_t cmd_sz,
				  struct ib_uverbs_rereg_mr_resp *resp, size_t resp_sz)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_dereg_mr(struct verbs_mr *vmr)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_query_mr(struct ibv_pd *pd, struct verbs_mr *vmr, uint32_t mr_handle)
{
	return cmd_unsupported();
}

/* advice is enum ibv_advise_mr_advice. */
CNUAS_EXPORT int ibv_cmd_advise_mr(struct ibv_pd *pd, int advice, uint32_t flags,
				   struct ibv_sge *sg_list, uint32_t num_sge)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
				       uint64_t iova, int fd, int access, struct verbs_mr *vmr)
{
	return cmd_unsupported();
}

/* type is enum ibv_mw_type. */
CNUAS_EXPORT int ibv_cmd_alloc_mw(struct ibv_pd *pd, int type, struct ibv_mw *mw,
				  struct ibv_alloc_mw *cmd, size_t cmd_size,
				  struct ib_uverbs_alloc_mw_resp *resp, size_t resp_size)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_dealloc_mw(struct ibv_mw *mw)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_alloc_dm(struct ibv_context *ctx, const struct ibv_alloc_dm_attr *dm_attr,
				  struct verbs_dm *dm, struct ibv_command_buffer *link)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_free_dm(struct verbs_dm *dm)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_reg_dm_mr(struct ibv_pd *pd, struct verbs_dm *dm, uint64_t offset,
				   size_t length, unsigned int access, struct verbs_mr *vmr,
				   struct ibv_command_buffer *link)
{
	return cmd_unsupported();
}

/* ---- Completion queue commands: the provider's create_cq / resize_cq ops and the kernel-mediated
 * poll/notify fallbacks, reached only through a provider-created context. */

CNUAS_EXPORT int ibv_cmd_create_cq(struct ibv_context *context, int cqe,
				   struct ibv_comp_channel *channel, int comp_vector,
				   struct ibv_cq *cq, struct ibv_create_cq *cmd, size_t cmd_size,
				   struct ib_uverbs_create_cq_resp *resp, size_t resp_size)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_create_cq_ex(struct ibv_context *context,
				      const struct ibv_cq_init_attr_ex *cq_attr,
				      struct verbs_cq *cq, struct ibv_create_cq_ex *cmd,
				      size_t cmd_size, struct ib_uverbs_ex_create_cq_resp *resp,
				      size_t resp_size, uint32_t cmd_flags)
{
	return cmd_unsupported();
}

/* Follows ibv_poll_cq's convention, not the ibv_cmd_* one: a negative count is the error. */
CNUAS_EXPORT int ibv_cmd_poll_cq(struct ibv_cq *cq, int ne, struct ibv_wc *wc)
{
	errno = EOPNOTSUPP;
	return -1;
}

CNUAS_EXPORT int ibv_cmd_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_resize_cq(struct ibv_cq *cq, int cqe, struct ibv_resize_cq *cmd,
				   size_t cmd_size, struct ib_uverbs_resize_cq_resp *resp,
				   size_t resp_size)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_destroy_cq(struct ibv_cq *cq)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_modify_cq(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr,
				   struct ibv_modify_cq *cmd, size_t cmd_size)
{
	return cmd_unsupported();
}

/* ---- Shared receive queue commands: the provider's create_srq ops, reached only through a
 * provider-created context. */

CNUAS_EXPORT int ibv_cmd_create_srq(struct ibv_pd *pd, struct ibv_srq *srq,
				    struct ibv_srq_init_attr *attr, struct ibv_create_srq *cmd,
				    size_t cmd_size, struct ib_uverbs_create_srq_resp *resp,
				    size_t resp_size)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_create_srq_ex(struct ibv_context *context, struct verbs_srq *srq,
				       struct ibv_srq_init_attr_ex *attr_ex,
				       struct ibv_create_xsrq *cmd, size_t cmd_size,
				       struct ib_uverbs_create_srq_resp *resp, size_t resp_size)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
				    int srq_attr_mask, struct ibv_modify_srq *cmd, size_t cmd_size)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
				   struct ibv_query_srq *cmd, size_t cmd_size)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_destroy_srq(struct ibv_srq *srq)
{
	return cmd_unsupported();
}

/* ---- Queue pair commands: the provider's create_qp / modify_qp ops, reached only through a
 * provider-created context. */

CNUAS_EXPORT int ibv_cmd_create_qp(struct ibv_pd *pd, struct ibv_qp *qp,
				   struct ibv_qp_init_attr *attr, struct ibv_create_qp *cmd,
				   size_t cmd_size, struct ib_uverbs_create_qp_resp *resp,
				   size_t resp_size)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_create_qp_ex(struct ibv_context *context, struct verbs_qp *qp,
				      struct ibv_qp_init_attr_ex *attr_ex, struct ibv_create_qp *cmd,
				      size_t cmd_size, struct ib_uverbs_create_qp_resp *resp,
				      size_t resp_size)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_create_qp_ex2(struct ibv_context *context, struct verbs_qp *qp,
				       struct ibv_qp_init_attr_ex *qp_attr,
				       struct ibv_create_qp_ex *cmd, size_t cmd_size,
				       struct ib_uverbs_ex_create_qp_resp *resp, size_t resp_size)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_open_qp(struct ibv_context *context, struct verbs_qp *qp, int vqp_sz,
				 struct ibv_qp_open_attr *attr, struct ibv_open_qp *cmd,
				 size_t cmd_size, struct ib_uverbs_create_qp_resp *resp,
				 size_t resp_size)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *qp_attr, int attr_mask,
				  struct ibv_qp_init_attr *qp_init_attr, struct ibv_query_qp *cmd,
				  size_t cmd_size)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
				   struct ibv_modify_qp *cmd, size_t cmd_size)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_modify_qp_ex(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
				      struct ibv_modify_qp_ex *cmd, size_t cmd_size,
				      struct ib_uverbs_ex_modify_qp_resp *resp, size_t resp_size)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_destroy_qp(struct ibv_qp *qp)
{
	return cmd_unsupported();
}

/* ---- Kernel-mediated post fallbacks: a provider whose data path is not in user space posts work
 * requests through the kernel with these, on QPs and SRQs only a provider context can own. Like the
 * real ones, they name the first work request as the one that failed. */

CNUAS_EXPORT int ibv_cmd_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
				   struct ibv_send_wr **bad_wr)
{
	if (bad_wr)
		*bad_wr = wr;
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
				   struct ibv_recv_wr **bad_wr)
{
	if (bad_wr)
		*bad_wr = wr;
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
				       struct ibv_recv_wr **bad_wr)
{
	if (bad_wr)
		*bad_wr = wr;
	return cmd_unsupported();
}

/* ---- Address handle and multicast commands: the provider's create_ah / attach_mcast ops, reached
 * only through a provider-created context. */

CNUAS_EXPORT int ibv_cmd_create_ah(struct ibv_pd *pd, struct ibv_ah *ah, struct ibv_ah_attr *attr,
				   struct ib_uverbs_create_ah_resp *resp, size_t resp_size)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_destroy_ah(struct ibv_ah *ah)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return cmd_unsupported();
}

/* ---- Steering, RSS and counter commands (flows, flow actions, work queues, indirection tables,
 * counters): Ethernet-adapter features of mlx5, reached only through a provider-created context. */

CNUAS_EXPORT int ibv_cmd_create_flow(struct ibv_qp *qp, struct ibv_flow *flow_id,
				     struct ibv_flow_attr *flow_attr, void *ucmd, size_t ucmd_size)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_destroy_flow(struct ibv_flow *flow_id)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_create_flow_action_esp(struct ibv_context *ctx,
						struct ibv_flow_action_esp_attr *attr,
						struct verbs_flow_action *flow_action,
						struct ibv_command_buffer *driver)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_modify_flow_action_esp(struct verbs_flow_action *flow_action,
						struct ibv_flow_action_esp_attr *attr,
						struct ibv_command_buffer *driver)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_destroy_flow_action(struct verbs_flow_action *action)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_create_wq(struct ibv_context *context,
				   struct ibv_wq_init_attr *wq_init_attr, struct ibv_wq *wq,
				   struct ibv_create_wq *cmd, size_t cmd_size,
				   struct ib_uverbs_ex_create_wq_resp *resp, size_t resp_size)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_modify_wq(struct ibv_wq *wq, struct ibv_wq_attr *attr,
				   struct ibv_modify_wq *cmd, size_t cmd_size)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_destroy_wq(struct ibv_wq *wq)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_create_rwq_ind_table(struct ibv_context *context,
					      struct ibv_rwq_ind_table_init_attr *init_attr,
					      struct ibv_rwq_ind_table *rwq_ind_table,
					      struct ib_uverbs_ex_create_rwq_ind_table_resp *resp,
					      size_t resp_size)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_destroy_rwq_ind_table(struct ibv_rwq_ind_table *rwq_ind_table)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_create_counters(struct ibv_context *context,
					 struct ibv_counters_init_attr *init_attr,
					 struct verbs_counters *vcounters,
					 struct ibv_command_buffer *link)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_destroy_counters(struct verbs_counters *vcounters)
{
	return cmd_unsupported();
}

CNUAS_EXPORT int ibv_cmd_read_counters(struct verbs_counters *vcounters, uint64_t *counters_value,
				       uint32_t ncounters, uint32_t flags,
				       struct ibv_command_buffer *link)
{
	return cmd_unsupported();
}
