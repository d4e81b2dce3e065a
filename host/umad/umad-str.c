/*
 * Cnuas's libibumad: the names of management classes, methods, attributes and statuses
 * (umad_str.h), with the same answers as rdma-core 44's for the classes it names.
 */
#include "cnuas-umad.h"

#include <infiniband/umad_str.h>

#include <arpa/inet.h>
#include <stddef.h>

CNUAS_EXPORT const char *umad_class_str(uint8_t mgmt_class)
{
    switch (mgmt_class) {
    case 0x01:
    case 0x81:
        return "Subn";
    case 0x03:
        return "SubnAdm";
    case 0x04:
        return "Perf";
    case 0x05:
        return "BM";
    case 0x06:
        return "DevMgt";
    case 0x07:
        return "ComMgt";
    case 0x08:
        return "SNMP";
    case 0x10:
        return "DevAdm";
    case 0x11:
        return "BootMgt";
    case 0x12:
        return "BIS";
    case 0x21:
        return "CongestionManagment"; /* sic, as rdma-core spells it */
    default:
        break;
    }
    if ((mgmt_class >= 0x09 && mgmt_class <= 0x0f) || (mgmt_class >= 0x30 && mgmt_class <= 0x4f))
        return "Vendor";
    if (mgmt_class >= 0x13 && mgmt_class <= 0x2f)
        return "Application";
    return "<unknown>";
}

CNUAS_EXPORT const char *umad_method_str(uint8_t mgmt_class, uint8_t method)
{
    if (mgmt_class == 0x03) {
        switch (method) {
        case 0x12:
            return "GetTable";
        case 0x13:
            return "GetTraceTable";
        case 0x14:
            return "GetMulti";
        case 0x15:
            return "Delete";
        case 0x92:
            return "GetTableResp";
        case 0x94:
            return "GetMultiResp";
        case 0x95:
            return "DeleteResp";
        default:
            break;
        }
    }
    switch (method) {
    case 0x01:
        return "Get";
    case 0x02:
        return "Set";
    case 0x03:
        return "Send";
    case 0x05:
        return "Trap";
    case 0x06:
        return "Report";
    case 0x07:
        return "TrapRepress";
    case 0x81:
        return "GetResp";
    case 0x86:
        return "ReportResp";
    default:
        return "<unknown>";
    }
}

static const char *common_attr(uint16_t id)
{
    switch (id) {
    case 0x0001:
        return "Class Port Info";
    case 0x0002:
        return "Notice";
    case 0x0003:
        return "Inform Info";
    default:
        return NULL;
    }
}

static const char *smp_attr(uint16_t id)
{
    switch (id) {
    case 0x0010:
        return "NodeDescription";
    case 0x0011:
        return "NodeInfo";
    case 0x0012:
        return "SwitchInfo";
    case 0x0014:
        return "GUIDInfo";
    case 0x0015:
        return "PortInfo";
    case 0x0016:
        return "P_KeyTable";
    case 0x0017:
        return "SLtoVLMappingTable";
    case 0x0018:
        return "VLArbitrationTable";
    case 0x0019:
        return "LinearForwardingTable";
    case 0x001A:
        return "RandomForwardingTable";
    case 0x001B:
        return "MulticastForwardingTable";
    case 0x001C:
        return "LinkSpeedWidthPairsTable";
    case 0x001D:
        return "VendorSpecificMadsTable";
    case 0x001E:
        return "HierarchyInfo";
    case 0x0020:
        return "SMInfo";
    case 0x0030:
        return "VendorDiag";
    case 0x0031:
        return "LedInfo";
    case 0x0032:
        return "CableInfo";
    case 0x0033:
        return "PortInfoExtended";
    default:
        return NULL;
    }
}

static const char *sa_attr(uint16_t id)
{
    switch (id) {
    case 0x0011:
        return "NodeRecord";
    case 0x0012:
        return "PortInfoRecord";
    case 0x0013:
        return "SLtoVLMappingTableRecord";
    case 0x0014:
        return "SwitchInfoRecord";
    case 0x0015:
        return "LinearForwardingTableRecord";
    case 0x0016:
        return "RandomForwardingTableRecord";
    case 0x0017:
        return "MulticastForwardingTableRecord";
    case 0x0018:
        return "SMInfoRecord";
    case 0x0019:
        return "LinkSpeedWidthPairsTableRecord";
    case 0x0020:
        return "LinkRecord";
    case 0x0030:
        return "GuidInfoRecord";
    case 0x0031:
        return "ServiceRecord";
    case 0x0033:
        return "P_KeyTableRecord";
    case 0x0035:
        return "PathRecord";
    case 0x0036:
        return "VLArbitrationTableRecord";
    case 0x0038:
        return "MCMemberRecord";
    case 0x0039:
        return "TraceRecord";
    case 0x003A:
        return "MultiPathRecord";
    case 0x003B:
        return "ServiceAssociationRecord";
    case 0x003C:
        return "HierarchyInfoRecord";
    case 0x003D:
        return "CableInfoRecord";
    case 0x003E:
        return "PortInfoExtendedRecord";
    case 0x00F3:
        return "InformInfoRecord";
    default:
        return NULL;
    }
}

static const char *cm_attr(uint16_t id)
{
    static const char *const names[] = {
        "ConnectRequest",   "MsgRcptAck",          "ConnectReject",       "ConnectReply",
        "ReadyToUse",       "DisconnectRequest",   "DisconnectReply",     "ServiceIDResReq",
        "ServiceIDResReqResp", "LoadAlternatePath", "AlternatePathResponse",
        "SuggestAlternatePath", "SuggestPathResponse"};
    if (id >= 0x0010 && id < 0x0010 + sizeof(names) / sizeof(names[0]))
        return names[id - 0x0010];
    return NULL;
}

CNUAS_EXPORT const char *umad_attribute_str(uint8_t mgmt_class, __be16 attr_id)
{
    const uint16_t id = ntohs(attr_id);
    const char *s = NULL;
    switch (mgmt_class) {
    case 0x01:
    case 0x81:
        s = smp_attr(id);
        break;
    case 0x03:
        s = sa_attr(id);
        break;
    case 0x07:
        s = cm_attr(id);
        break;
    case 0x04:
    case 0x21:
        break;
    default:
        return "<unknown>";
    }
    if (!s)
        s = common_attr(id);
    return s ? s : "<unknown>";
}

/* IBA vol. 1 §13.4.7 (Table 110): bit 0 busy, bit 1 redirect, bits 4:2 the invalid-field code. */
CNUAS_EXPORT const char *umad_common_mad_status_str(__be16 _status)
{
    const uint16_t status = ntohs(_status);
    if (status & 0x0001)
        return "Busy";
    if (status & 0x0002)
        return "Redirection required";
    switch ((status >> 2) & 0x7) {
    case 1:
        return "Bad Version";
    case 2:
        return "Method not supported";
    case 3:
        return "Method/Attribute combo not supported";
    case 7:
        return "Invalid attribute/modifier field";
    default:
        return "Success";
    }
}

/* IBA vol. 1 §15.2.1.1 (Table 197): the SA's class-specific status in bits 15:8. */
CNUAS_EXPORT const char *umad_sa_mad_status_str(__be16 _status)
{
    switch (ntohs(_status) >> 8) {
    case 0:
        return "Success";
    case 1:
        return "No Resources";
    case 2:
        return "Request Invalid";
    case 3:
        return "No Records";
    case 4:
        return "Too Many Records";
    case 5:
        return "Invalid GID";
    case 6:
        return "Insufficient Components";
    case 7:
        return "Request Denied";
    case 8:
        return "Priority Suggested";
    default:
        return "Undefined Error";
    }
}
