// PLACEHOLDER: the split behaviours of `tokenizers` (normalizer.rs SplitDelimiterBehavior), written in this change.
#pragma once
