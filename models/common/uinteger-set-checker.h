// An attribute checker for unsigned integers that may take only some values: the VL counts
// InfiniBand allows (1, 2, 4, 8 or 15), for example. ns-3's MakeUintegerChecker knows ranges
// only, so `--set ns3::IbSubnetManager::OperationalVls=3` used to be accepted.
#ifndef CNUAS_UINTEGER_SET_CHECKER_H
#define CNUAS_UINTEGER_SET_CHECKER_H

#include "ns3/attribute.h"
#include "ns3/type-name.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ns3
{

/**
 * \brief Accepts a UintegerValue only if it is one of a fixed set of values.
 *
 * The underlying type information names the set ("uint8_t, one of 1, 2, 4, 8, 15"), which is
 * what `cnuas --set` and the scenario files print when a value is refused.
 */
class UintegerSetChecker : public AttributeChecker
{
  public:
    UintegerSetChecker(std::vector<uint64_t> allowed, std::string typeName)
        : m_allowed(std::move(allowed)),
          m_typeName(std::move(typeName))
    {
    }

    bool Check(const AttributeValue& value) const override
    {
        const auto* v = dynamic_cast<const UintegerValue*>(&value);
        return v && std::find(m_allowed.begin(), m_allowed.end(), v->Get()) != m_allowed.end();
    }

    std::string GetValueTypeName() const override { return "ns3::UintegerValue"; }

    bool HasUnderlyingTypeInformation() const override { return true; }

    std::string GetUnderlyingTypeInformation() const override
    {
        std::string text = m_typeName + ", one of ";
        for (size_t i = 0; i < m_allowed.size(); ++i)
        {
            text += (i ? ", " : "") + std::to_string(m_allowed[i]);
        }
        return text;
    }

    Ptr<AttributeValue> Create() const override { return ns3::Create<UintegerValue>(); }

    bool Copy(const AttributeValue& source, AttributeValue& destination) const override
    {
        const auto* src = dynamic_cast<const UintegerValue*>(&source);
        auto* dst = dynamic_cast<UintegerValue*>(&destination);
        if (!src || !dst)
        {
            return false;
        }
        *dst = *src;
        return true;
    }

  private:
    std::vector<uint64_t> m_allowed;
    std::string m_typeName;
};

/// A checker that accepts only the values in `allowed`, each of which must fit in T.
template <typename T>
Ptr<const AttributeChecker>
MakeUintegerSetChecker(std::vector<uint64_t> allowed)
{
    return Ptr<const AttributeChecker>(new UintegerSetChecker(std::move(allowed), TypeNameGet<T>()),
                                       false);
}

} // namespace ns3

#endif // CNUAS_UINTEGER_SET_CHECKER_H
