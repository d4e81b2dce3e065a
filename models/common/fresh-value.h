// A value-initialized object per type, made once, to reset objects by copying from it.
#ifndef CNUAS_FRESH_VALUE_H
#define CNUAS_FRESH_VALUE_H

namespace ns3
{

/**
 * \brief T() made once: `*obj = FreshValue<T>()` gives every field what `*obj = T()` gives
 * (value-initialized, so what T() zeroes is zero here too) without building and destroying a
 * temporary each time.
 *
 * Why: the per-packet records that are reset for reuse (EthFrame, IbTransportHeaders) hold ns-3
 * EventImpls and Headers, whose constructors and destructors run through libns3 with a log check
 * each: for a reused EthFrame about 250 of the 350 instructions its reset cost.
 * Never destroyed: its destructor would run after ns-3's own statics at exit.
 */
template <typename T>
const T&
FreshValue()
{
    static const T* const fresh = new T();
    return *fresh;
}

} // namespace ns3

#endif
