// want "assembly"
#include "textflag.h"
